/** What a key press asks of the screen. */
export type NavigatorAction = 'redraw' | 'quit' | undefined;

/** A key as `readline.emitKeypressEvents` reports it. */
export interface KeyPress {
  name?: string;
  sequence?: string;
  ctrl?: boolean;
}

/**
 * The keyboard side of `kq events`' live screen: ↑/↓ (or k/j) move the selection over the task rows on screen,
 * Enter opens the selected task's page, Esc (or b, Backspace) goes back to the list, q or Ctrl+C quits.
 */
export class EventsNavigator {
  mode: 'list' | 'detail' = 'list';
  /** The selected task's uuid (undefined until a key moves the selection). */
  selected: string | undefined;

  static readonly LIST_KEYS = '↑↓ select, Enter open, q quit';
  static readonly DETAIL_KEYS = 'Esc back, q quit';

  /** Handles one key, given the uuids of the task rows on screen now (newest first). */
  key(press: KeyPress, rows: readonly string[]): NavigatorAction {
    if ((press.ctrl && press.name === 'c') || press.name === 'q') return 'quit';
    if (this.mode === 'detail') {
      if (press.name === 'escape' || press.name === 'backspace' || press.name === 'b' || press.name === 'left') {
        this.mode = 'list';
        return 'redraw';
      }
      return undefined;
    }
    const at = this.selected === undefined ? -1 : rows.indexOf(this.selected);
    if (press.name === 'down' || press.name === 'j') return this.#select(rows[Math.min(rows.length - 1, at + 1)]);
    if (press.name === 'up' || press.name === 'k') return this.#select(rows[Math.max(0, at - 1)]);
    if ((press.name === 'return' || press.name === 'enter' || press.name === 'right') && this.selected !== undefined && at >= 0) {
      this.mode = 'detail';
      return 'redraw';
    }
    return undefined;
  }

  #select(uuid: string | undefined): NavigatorAction {
    if (uuid === undefined || uuid === this.selected) return undefined;
    this.selected = uuid;
    return 'redraw';
  }
}

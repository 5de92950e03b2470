import { loadavg, type as osType } from 'node:os';

/** The kq release announced in worker events and `inspect report` (kept in step with packages/worker/package.json). */
export const KQ_VERSION = '0.1.0';

/** Celery's `SOFTWARE_INFO` (`sw_ident`, `sw_ver`, `sw_sys`), sent with every worker event. */
export interface SoftwareInfo {
  sw_ident: string;
  sw_ver: string;
  sw_sys: string;
}

/**
 * What kq workers announce. Python workers say `py-celery`; monitors (`celery events`, Flower) only display these
 * fields, so kq names itself.
 */
export const SOFTWARE_INFO: Readonly<SoftwareInfo> = Object.freeze({
  sw_ident: 'kq',
  sw_ver: KQ_VERSION,
  sw_sys: pythonSystemName(osType()),
});

/**
 * Celery's `load_average()`: the 1, 5 and 15 minute load averages, each rounded **up** to two decimals
 * (`ceil(x * 100) / 100`, same float arithmetic as Python, so both report the same numbers).
 */
export function loadAverage(): [number, number, number] {
  const [one = 0, five = 0, fifteen = 0] = loadavg();
  return [roundUp(one), roundUp(five), roundUp(fifteen)];
}

function roundUp(value: number): number {
  return Math.ceil(value * 1e2) / 1e2;
}

/** Python's `platform.system()` for Node's `os.type()`. */
function pythonSystemName(type: string): string {
  return type === 'Windows_NT' ? 'Windows' : type;
}

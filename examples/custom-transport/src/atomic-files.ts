import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** Node's error for a failed file system call. */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? ((error as NodeJS.ErrnoException).code ?? undefined) : undefined;
}

export function isMissing(error: unknown): boolean {
  return errorCode(error) === 'ENOENT';
}

/**
 * Writes `data` to `target` so that readers see either nothing or the whole file: write into the staging
 * directory (same file system), optionally fsync, then `rename` into place — rename is atomic.
 * Creates the target directory when missing.
 */
export async function writeAtomically(tmpDir: string, target: string, data: Buffer | string, sync = false): Promise<void> {
  const staged = join(tmpDir, `${process.pid}-${randomBytes(8).toString('hex')}.tmp`);
  const handle = await open(staged, 'wx');
  try {
    await handle.writeFile(data);
    if (sync) await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await renameCreatingDirectory(staged, target);
  } catch (error) {
    await unlink(staged).catch(() => undefined);
    throw error;
  }
}

/** `rename`, creating the destination directory once if it does not exist yet. */
export async function renameCreatingDirectory(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if (!isMissing(error)) throw error;
    await mkdir(dirname(to), { recursive: true });
    await rename(from, to);
  }
}

/** The parsed JSON in `file`, or undefined when the file does not exist or is not JSON. */
export async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (error) {
    if (isMissing(error) || error instanceof SyntaxError) return undefined;
    throw error;
  }
}

/** Removes a file; a file that is already gone is fine. Resolves to whether this call removed it. */
export async function unlinkIfPresent(file: string): Promise<boolean> {
  try {
    await unlink(file);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

/** Moves a directory out of sight (atomic rename into staging), then deletes it at leisure. */
export async function removeDirectoryAtomically(tmpDir: string, directory: string): Promise<boolean> {
  const graveyard = join(tmpDir, `deleted-${process.pid}-${randomBytes(8).toString('hex')}`);
  try {
    await rename(directory, graveyard);
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
  await rm(graveyard, { recursive: true, force: true });
  return true;
}

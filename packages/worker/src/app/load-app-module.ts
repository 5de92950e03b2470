import { importAppModule } from '../pool/import-app-module';
import type { App } from './app';

/**
 * Imports the module that exports your App (`export const app` or the default export) and returns it: what `kq -A`
 * and the pool children do. A TypeScript module is loaded through tsx.
 */
export async function loadAppModule(path: string): Promise<App> {
  // Checked by shape (the App's tasks, conf and sendTaskMessage), which every App has.
  return (await importAppModule(path)) as App;
}

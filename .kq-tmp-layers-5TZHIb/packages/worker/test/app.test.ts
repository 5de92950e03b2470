import { App } from '../src/app/app';
export const app = new App();

export { App } from './app/app';

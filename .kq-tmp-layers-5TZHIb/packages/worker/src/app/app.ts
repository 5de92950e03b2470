import { node } from '../protocol/nodename';
export class App { n = node(); }

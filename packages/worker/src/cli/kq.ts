#!/usr/bin/env node
import { runKq } from './run-kq';

void runKq(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});

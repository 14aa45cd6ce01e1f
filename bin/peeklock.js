#!/usr/bin/env node
// Thin entry point: the compiled CLI lives in dist/ (built by `npm install` / `npm ci` through `prepare`).
import { main } from '../dist/cli/main.js';

await main(process.argv);

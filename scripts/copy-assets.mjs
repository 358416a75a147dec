#!/usr/bin/env node
// tsc compiles .ts only; runtime assets that live beside the code (Lua scripts, .proto files)
// are copied into dist/ with the same relative paths.
import { cpSync, readdirSync, statSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';

const exts = ['.lua', '.proto', '.json', '.yaml'];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (exts.some((e) => name.endsWith(e))) {
      const out = join('dist', p);
      mkdirSync(dirname(out), { recursive: true });
      cpSync(p, out);
    }
  }
})('src');

// A Rolldown plugin that `accelhost-sdk build` adds to the bundle a JavaScript plugin is
// componentized from. The plugin's code runs inside that one bundle, so the line a stack frame
// gives counts in the bundle; this appends to the bundle a table from its lines to the author's
// files and lines (read from the bundle's source map, which is then dropped), by which
// `accelhost.js` reports where an exception was thrown.

import { dirname, isAbsolute, relative, resolve } from 'node:path';

/** Where `accelhost.js` finds the table at run time. */
export const TABLE_KEY = 'accelhost-sdk.source-lines';

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * The fields of one source-map segment (base64 VLQ, each relative to the same field of the
 * previous segment).
 * @param {string} segment
 * @returns {number[]}
 */
function decodeSegment(segment) {
  const fields = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = BASE64.indexOf(char);
    if (digit < 0) {
      throw new Error(`source map: '${char}' is not a base64 digit`);
    }
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    fields.push(value & 1 ? -(value >>> 1) : value >>> 1);
    value = 0;
    shift = 0;
  }
  return fields;
}

/**
 * For each line of the generated code that starts a run from one source line: `[generated
 * line, source index, source line]`, lines counted from 1 (source index -1: generated code).
 * @param {string} mappings
 * @returns {number[][]}
 */
export function lineRuns(mappings) {
  const runs = [];
  let source = 0;
  let sourceLine = 0;
  let previous = '';
  mappings.split(';').forEach((line, index) => {
    let first = null;
    for (const segment of line.split(',')) {
      if (segment === '') {
        continue;
      }
      const fields = decodeSegment(segment);
      if (fields.length >= 4) {
        source += fields[1];
        sourceLine += fields[2];
        first ??= [source, sourceLine];
      }
    }
    const [at, row] = first ?? [-1, 0];
    const key = `${at}:${row}`;
    if (key !== previous) {
      runs.push([index + 1, at, row + 1]);
      previous = key;
    }
  });
  return runs;
}

/**
 * The plugin: `pluginDir` is the author's directory; sources outside it, and under
 * `node_modules`, are not the author's and map to no file.
 * @param {string} pluginDir
 */
export function sourceLines(pluginDir) {
  return {
    name: 'accelhost-sdk-source-lines',
    generateBundle(options, bundle) {
      // Source paths in the map are relative to the directory the bundle would be written to.
      const outDir = resolve(pluginDir, options.dir ?? 'dist');
      for (const [name, item] of Object.entries(bundle)) {
        if (item.type === 'asset') {
          delete bundle[name];
          continue;
        }
        const map = item.map;
        if (!map) {
          throw new Error('accelhost-sdk: the bundle has no source map');
        }
        const files = map.sources.map((source) => {
          const path = relative(pluginDir, resolve(dirname(resolve(outDir, name)), source));
          const outside = path.startsWith('..') || isAbsolute(path);
          return outside || path.split(/[\\/]/).includes('node_modules') ? null : path;
        });
        const known = [];
        const runs = [];
        for (const [line, source, row] of lineRuns(map.mappings)) {
          const file = source >= 0 ? files[source] : null;
          if (file !== null && !known.includes(file)) {
            known.push(file);
          }
          const run = file === null ? [line, -1, 0] : [line, known.indexOf(file), row];
          const last = runs[runs.length - 1];
          if (!last || last[1] !== run[1] || (run[1] >= 0 && last[2] !== run[2])) {
            runs.push(run);
          }
        }
        const table = JSON.stringify({ bundle: name, files: known, runs });
        // Appended, so that no line of the bundle moves.
        item.code += `\nglobalThis[Symbol.for(${JSON.stringify(TABLE_KEY)})] = ${table};\n`;
      }
    },
  };
}

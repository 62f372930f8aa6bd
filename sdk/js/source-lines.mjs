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
 * For each line of the generated code, where its first mapped segment comes from: `[source
 * index, source line]`, lines counted from 1 (`[-1, 0]`: generated code).
 * @param {string} mappings
 * @returns {number[][]}
 */
function lineSources(mappings) {
  let source = 0;
  let sourceLine = 0;
  return mappings.split(';').map((line) => {
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
    return [at, row + 1];
  });
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
        // Runs of `[first generated line, file index, its source line]`: a line belongs to the
        // last run that starts at or before it, one source line further per generated line
        // (how `accelhost.js` reads the table); a line that the run does not predict starts
        // the next one. File index -1: not the author's code.
        const known = [];
        const runs = [];
        lineSources(map.mappings).forEach(([source, row], index) => {
          const line = index + 1;
          const file = source >= 0 ? files[source] : null;
          if (file !== null && !known.includes(file)) {
            known.push(file);
          }
          const at = file === null ? -1 : known.indexOf(file);
          const last = runs[runs.length - 1];
          const predicted = last && last[1] === at && (at < 0 || last[2] + (line - last[0]) === row);
          if (!predicted) {
            runs.push([line, at, at < 0 ? 0 : row]);
          }
        });
        const table = JSON.stringify({ bundle: name, files: known, runs });
        // Appended, so that no line of the bundle moves.
        item.code += `\nglobalThis[Symbol.for(${JSON.stringify(TABLE_KEY)})] = ${table};\n`;
      }
    },
  };
}

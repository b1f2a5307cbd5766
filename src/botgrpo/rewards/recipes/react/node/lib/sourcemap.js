"use strict";
// Map a line of generated code back to a line of the source through a version-3 source map.

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DIGIT = new Map([...B64].map((c, i) => [c, i]));

function decodeSegment(text) {
  const values = [];
  let value = 0;
  let shift = 0;
  for (const c of text) {
    const digit = DIGIT.get(c);
    if (digit === undefined) break;
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      values.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return values;
}

// Returns lines[g] = [[generatedColumn, sourceLine0], ...] for each generated line g (0-based).
function decodeMappings(mappings) {
  const lines = [];
  let sourceLine = 0;
  for (const lineText of mappings.split(";")) {
    const segments = [];
    let column = 0;
    for (const seg of lineText.split(",")) {
      if (!seg) continue;
      const v = decodeSegment(seg);
      column += v[0];
      if (v.length >= 4) {
        sourceLine += v[2];
        segments.push([column, sourceLine]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

// The 1-based source line of generated (line, column) (both 1-based), or null.
function originalLine(decoded, line, column) {
  for (let g = line - 1; g >= 0; g--) {
    const segments = decoded[g] || [];
    if (!segments.length) continue;
    let best = segments[segments.length - 1];
    if (g === line - 1) {
      best = segments[0];
      for (const s of segments) {
        if (s[0] <= column - 1) best = s;
      }
    }
    return best[1] + 1;
  }
  return null;
}

module.exports = { decodeMappings, originalLine };

/**
 * The 1-based line on which each top-level element of a JSON array starts, so a refusal can say
 * "line 40 / task 17" of a Label Studio export, which is one JSON array (one task per line or
 * pretty-printed). Call it on text JSON.parse accepted; it only tracks strings and nesting.
 */
export function topLevelElementLines(text: string): number[] {
  const lines: number[] = [];
  let line = 1;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let expectingElement = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 /* \n */) line++;
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 92 /* \ */) escaped = true;
      else if (c === 34 /* " */) inString = false;
      continue;
    }
    if (c === 32 || c === 9 || c === 10 || c === 13) continue;
    if (depth === 1 && expectingElement && c !== 93 /* ] */) {
      lines.push(line);
      expectingElement = false;
    }
    if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      if (depth === 1) expectingElement = true;
    } else if (c === 125 /* } */ || c === 93) depth--;
    else if (c === 44 /* , */ && depth === 1) expectingElement = true;
  }
  return lines;
}

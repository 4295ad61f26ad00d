/**
 * JSON.parse whose failure reason is safe to print: V8 quotes the start of the bad input in its
 * message ("Unexpected token 'P', "Patient ha"... is not valid JSON"), and these files hold note
 * text. The reason keeps only the character position.
 */
export function parseJsonSafely(text: string): { value: unknown } | { reason: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    const position = /at position (\d+)/.exec((error as Error).message);
    return { reason: position ? `not JSON (error at character ${position[1]})` : 'not JSON' };
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

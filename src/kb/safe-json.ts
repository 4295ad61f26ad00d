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

/**
 * The key path (from the root) to the first node of a parsed JSON value that `found` picks, or
 * undefined when none. Iterative: JSON.parse reads any depth, where recursive code overflows.
 */
function pathWhere(value: unknown, found: (node: unknown, depth: number) => boolean): string[] | undefined {
  type Step = { node: unknown; depth: number; key: string; up: Step | undefined };
  const pending: Step[] = [{ node: value, depth: 0, key: '', up: undefined }];
  while (pending.length > 0) {
    const step = pending.pop()!;
    if (found(step.node, step.depth)) {
      const path: string[] = [];
      for (let at: Step | undefined = step; at?.up !== undefined; at = at.up) path.push(at.key);
      return path.reverse();
    }
    if (typeof step.node !== 'object' || step.node === null) continue;
    const children = Object.entries(step.node);
    // Reversed onto the stack, so that the first key in document order is reported first.
    for (let i = children.length - 1; i >= 0; i--) pending.push({ node: children[i]![1], depth: step.depth + 1, key: children[i]![0], up: step });
  }
  return undefined;
}

/**
 * The key path to the first array or object nested more than `limit` deep, or undefined: for
 * documents read by recursive code (a zod schema of a recursive shape overflows the stack on them).
 */
export function pathDeeperThan(value: unknown, limit: number): string[] | undefined {
  return pathWhere(value, (node, depth) => depth >= limit && typeof node === 'object' && node !== null);
}

/**
 * The key path to the first number that is not finite, or undefined: JSON has no NaN or Infinity,
 * but reads 1e400 as Infinity, which zod's number() accepts and arithmetic turns into NaN.
 */
export function pathOfNonFinite(value: unknown): string[] | undefined {
  return pathWhere(value, (node) => typeof node === 'number' && !Number.isFinite(node));
}

import { z } from 'zod';
import { InputError } from '../kb/errors.ts';

/**
 * The two kinds of model a calibration part can be (cuilink calibrate --model): both give a logit
 * over the CONFIDENCE_FEATURES vector. Logistic: standardized linear weights. Trees: gradient-boosted
 * regression trees on the raw features, summed at a learning rate over a base logit.
 */
export const logisticModelSchema = z
  .object({
    kind: z.literal('logistic'),
    mean: z.array(z.number()),
    scale: z.array(z.number().positive()),
    weights: z.array(z.number()),
    bias: z.number(),
  })
  .strict();

export type TreeNode = { leaf: number } | { feature: number; threshold: number; below: TreeNode; above: TreeNode };

/**
 * Splits from a tree's root to its deepest leaf at most: cuilink calibrate grows trees at most 8
 * deep (--depth); a deeper one is damage, and the recursive schema would overflow the stack on a
 * tree thousands of splits deep.
 */
export const MAX_TREE_DEPTH = 64;

/** A split sends a feature value ≤ threshold `below`, a larger one `above`. */
const treeNodeSchema: z.ZodType<TreeNode> = z.lazy(() =>
  z.union([
    z.object({ leaf: z.number() }).strict(),
    z.object({ feature: z.number().int().min(0), threshold: z.number(), below: treeNodeSchema, above: treeNodeSchema }).strict(),
  ]),
);

export const treesModelSchema = z
  .object({
    kind: z.literal('trees'),
    base: z.number(),
    rate: z.number().positive(),
    trees: z.array(treeNodeSchema).min(1),
  })
  .strict();

export const calibrationModelSchema = z.discriminatedUnion('kind', [logisticModelSchema, treesModelSchema]);

export type LogisticCalibrationModel = z.infer<typeof logisticModelSchema>;
export type TreesCalibrationModel = z.infer<typeof treesModelSchema>;
export type CalibrationModel = z.infer<typeof calibrationModelSchema>;

/** The model's logit for one feature vector. */
export function modelLogit(model: CalibrationModel, features: ArrayLike<number>): number {
  if (model.kind === 'logistic') {
    let z = model.bias;
    for (let i = 0; i < model.weights.length; i++) z += model.weights[i]! * ((features[i]! - model.mean[i]!) / model.scale[i]!);
    return z;
  }
  let sum = 0;
  for (const tree of model.trees) sum += treeValue(tree, features);
  return model.base + model.rate * sum;
}

/** The leaf value one tree gives a feature vector. */
export function treeValue(node: TreeNode, features: ArrayLike<number>): number {
  let at = node;
  while (!('leaf' in at)) at = features[at.feature]! <= at.threshold ? at.below : at.above;
  return at.leaf;
}

/** Refuses a model that does not fit a vector of `features` values (a message naming `part`). */
export function checkModelShape(model: CalibrationModel, features: number, path: string, part: string): void {
  if (model.kind === 'logistic') {
    if (model.mean.length !== features || model.scale.length !== features || model.weights.length !== features) {
      throw new InputError(`${path}: ${part}mean, ${part}scale and ${part}weights must each have ${features} values`, 'BAD_CALIBRATION');
    }
    return;
  }
  // Iterative and depth-bounded: a model built in code (not parsed) may be deeper still, or cyclic.
  for (const [i, tree] of model.trees.entries()) {
    const pending: [TreeNode, number][] = [[tree, 0]];
    while (pending.length > 0) {
      const [node, depth] = pending.pop()!;
      if ('leaf' in node) continue;
      if (depth >= MAX_TREE_DEPTH) throw new InputError(`${path}: ${part}trees.${i} is more than ${MAX_TREE_DEPTH} splits deep (or cyclic)`, 'BAD_CALIBRATION');
      if (node.feature >= features) throw new InputError(`${path}: a tree of ${part}trees splits on feature ${node.feature}; there are ${features}`, 'BAD_CALIBRATION');
      pending.push([node.below, depth + 1], [node.above, depth + 1]);
    }
  }
}

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { CONFIDENCE_FEATURES } from './confidence-features.ts';

export const CALIBRATION_FORMAT = 'cuilink-calibration/1';

const logisticPart = {
  mean: z.array(z.number()),
  scale: z.array(z.number().positive()),
  weights: z.array(z.number()),
  bias: z.number(),
};

/**
 * The NIL part: P(the mention's concept is not in the KB | features), fitted on held-out-concept
 * runs of the tune split (where `trainedPrevalence` of the mentions had lost their concept) and
 * read at `assumedPrevalence`, the share of mentions without a KB concept a deployment is assumed to see.
 */
const nilPartSchema = z
  .object({ ...logisticPart, trainedPrevalence: z.number().gt(0).lt(1), assumedPrevalence: z.number().gt(0).lt(1) })
  .strict();

/**
 * A calibration file (`cuilink calibrate` writes it; models/default/calibration.json ships): a
 * logistic model P(top-1 right | the concept is in the KB, features) over CONFIDENCE_FEATURES,
 * standardized, fitted on the tune split, and optionally the NIL part above; confidence is
 * P(right | in KB) · P(in KB). Fitted for exactly the models named in `models` (their manifest
 * checksums): anything else is refused at load, a calibration only means something for the models
 * and features it was fit on.
 */
export const calibrationFileSchema = z
  .object({
    format: z.literal(CALIBRATION_FORMAT),
    version: z.string().min(1),
    features: z.array(z.string()),
    ...logisticPart,
    nil: nilPartSchema.optional(),
    models: z.object({ biEncoder: z.string().regex(/^[0-9a-f]{64}$/), crossEncoder: z.string().regex(/^[0-9a-f]{64}$/).nullable() }).strict(),
    fit: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

export type CalibrationFile = z.infer<typeof calibrationFileSchema>;

export class ConfidenceCalibrator {
  readonly file: CalibrationFile;
  /** sha256 of the file's bytes: part of the link-cache key. */
  readonly sha256: string;
  readonly path: string;

  constructor(file: CalibrationFile, sha256: string, path: string) {
    const n = CONFIDENCE_FEATURES.length;
    if (file.features.length !== n || file.features.some((f, i) => f !== CONFIDENCE_FEATURES[i])) {
      throw new InputError(`${path}: fitted on features [${file.features.join(', ')}], this linker computes [${CONFIDENCE_FEATURES.join(', ')}]; fit it again with cuilink calibrate`, 'BAD_CALIBRATION');
    }
    for (const [part, values] of [['', file], ['nil.', file.nil]] as const) {
      if (values && (values.mean.length !== n || values.scale.length !== n || values.weights.length !== n)) throw new InputError(`${path}: ${part}mean, ${part}scale and ${part}weights must each have ${n} values`, 'BAD_CALIBRATION');
    }
    this.file = file;
    this.sha256 = sha256;
    this.path = path;
  }

  static load(path: string): ConfidenceCalibrator {
    let bytes: Buffer;
    let raw: unknown;
    try {
      bytes = readFileSync(path);
      raw = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      throw new InputError(`calibration file ${path}: ${(error as Error).message}`, 'BAD_CALIBRATION', error);
    }
    const parsed = calibrationFileSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new InputError(`calibration file ${path}: '${issue.path.join('.') || '(root)'}': ${issue.message}`, 'BAD_CALIBRATION');
    }
    return new ConfidenceCalibrator(parsed.data, createHash('sha256').update(bytes).digest('hex'), path);
  }

  /** Why the calibration does not fit these models, or undefined when it does. */
  mismatch(models: { biEncoder: string; crossEncoder: string | null }): string | undefined {
    const want = this.file.models;
    if (want.biEncoder !== models.biEncoder) return `it was fit for bi-encoder ${want.biEncoder.slice(0, 12)}, the linker loaded ${models.biEncoder.slice(0, 12)}`;
    if (want.crossEncoder !== models.crossEncoder) return `it was fit for cross-encoder ${want.crossEncoder?.slice(0, 12) ?? 'none'}, the linker loaded ${models.crossEncoder?.slice(0, 12) ?? 'none'}`;
    return undefined;
  }

  /** P(top-1 right) for a feature vector (confidenceFeatures): P(right | in KB) · P(in KB). */
  probability(features: ArrayLike<number>): number {
    const right = sigmoid(linear(this.file, features));
    const nil = this.file.nil;
    if (!nil) return right;
    // Bayes: the NIL part's odds at the prevalence it was fit at, moved to the assumed one.
    const shift = Math.log(nil.assumedPrevalence / (1 - nil.assumedPrevalence)) - Math.log(nil.trainedPrevalence / (1 - nil.trainedPrevalence));
    return right * (1 - sigmoid(linear(nil, features) + shift));
  }
}

function linear(part: { mean: number[]; scale: number[]; weights: number[]; bias: number }, features: ArrayLike<number>): number {
  let z = part.bias;
  for (let i = 0; i < part.weights.length; i++) z += part.weights[i]! * ((features[i]! - part.mean[i]!) / part.scale[i]!);
  return z;
}

function sigmoid(z: number): number {
  return 1 / (1 + Math.exp(-z));
}

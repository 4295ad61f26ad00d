import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { CONFIDENCE_FEATURES } from './confidence-features.ts';
import { calibrationModelSchema, checkModelShape, MAX_TREE_DEPTH, modelLogit, type CalibrationModel } from './calibration-model.ts';
import { pathDeeperThan, pathOfNonFinite } from '../kb/safe-json.ts';

/** Format 1: logistic parts only, their fields at the top level (the context reranker's file is one). */
export const CALIBRATION_FORMAT_V1 = 'cuilink-calibration/1';
/** Format 2: each part names its model kind (calibration-model.ts). `cuilink calibrate` writes it. */
export const CALIBRATION_FORMAT = 'cuilink-calibration/2';

const logisticPart = {
  mean: z.array(z.number()),
  scale: z.array(z.number().positive()),
  weights: z.array(z.number()),
  bias: z.number(),
};

/**
 * The NIL part's prevalences: it was fitted on held-out-concept runs (where `trainedPrevalence` of
 * the mentions had lost their concept) and is read at `assumedPrevalence`, the share of mentions
 * without a KB concept a deployment is assumed to see.
 */
const prevalences = { trainedPrevalence: z.number().gt(0).lt(1), assumedPrevalence: z.number().gt(0).lt(1) };

/**
 * The NIL threshold chosen for this calibration (cuilink calibrate, by the rule of
 * docs/confidence.md): a threshold only means something for the confidence it was chosen on, so a
 * linker uses it unless the link config sets `nil.confidence`.
 */
const nilConfidenceSchema = z.number().min(0).max(1).optional();

/**
 * The NIL threshold on P(in KB), the NIL part alone (cuilink calibrate, by the same rule): a
 * threshold on confidence NILs wrong links to concepts the KB has as readily as mentions whose
 * concept it lacks, the NIL part tells the two apart (docs/confidence.md). A linker uses it unless
 * the link config sets `nil.inKb`.
 */
const nilInKbSchema = z.number().min(0).max(1).optional();

/** Nesting around a tree's splits in a calibration file: document, part, model and trees above its root, and its leaves below. */
const FILE_LEVELS_ABOVE_A_TREE = 5;

const modelsSchema = z.object({ biEncoder: z.string().regex(/^[0-9a-f]{64}$/), crossEncoder: z.string().regex(/^[0-9a-f]{64}$/).nullable() }).strict();

const calibrationFileV1Schema = z
  .object({
    format: z.literal(CALIBRATION_FORMAT_V1),
    version: z.string().min(1),
    features: z.array(z.string()),
    ...logisticPart,
    nil: z.object({ ...logisticPart, ...prevalences }).strict().optional(),
    nilConfidence: nilConfidenceSchema,
    models: modelsSchema,
    fit: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

const calibrationFileV2Schema = z
  .object({
    format: z.literal(CALIBRATION_FORMAT),
    version: z.string().min(1),
    features: z.array(z.string()),
    right: calibrationModelSchema,
    nil: z.object({ model: calibrationModelSchema, ...prevalences }).strict().optional(),
    /**
     * The non-entity part: P(the mention names no concept at all | features), fitted on natural
     * links against spans the corpus's annotators did not mark (NER false positives' stand-in),
     * `trainedPrevalence` of its examples being such spans; read at `assumedPrevalence`.
     */
    nonEntity: z.object({ model: calibrationModelSchema, ...prevalences }).strict().optional(),
    nilConfidence: nilConfidenceSchema,
    nilInKb: nilInKbSchema,
    models: modelsSchema,
    fit: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

/**
 * A calibration file (`cuilink calibrate` writes it; models/default/calibration.json ships): a
 * model of P(top-1 right | the concept is in the KB, features) over CONFIDENCE_FEATURES, and
 * optionally the NIL part, P(the concept is not in the KB | features), and the non-entity part,
 * P(the mention names no concept | features); confidence is P(right | in KB) · P(in KB). Fitted
 * for exactly the models named in `models` (their manifest checksums): anything else is refused at
 * load, a calibration only means something for the models and features it was fit on.
 */
export const calibrationFileSchema = z.discriminatedUnion('format', [calibrationFileV1Schema, calibrationFileV2Schema]);

export type CalibrationFile = z.infer<typeof calibrationFileV2Schema>;
type AnyCalibrationFile = z.infer<typeof calibrationFileSchema>;

/** A format-1 file read as format 2: the same logistic parts, named. */
function asFormat2(file: AnyCalibrationFile): CalibrationFile {
  if (file.format === CALIBRATION_FORMAT) return file;
  const { mean, scale, weights, bias, nil, ...rest } = file;
  return {
    ...rest,
    format: CALIBRATION_FORMAT,
    right: { kind: 'logistic', mean, scale, weights, bias },
    ...(nil ? { nil: { model: { kind: 'logistic' as const, mean: nil.mean, scale: nil.scale, weights: nil.weights, bias: nil.bias }, trainedPrevalence: nil.trainedPrevalence, assumedPrevalence: nil.assumedPrevalence } } : {}),
  };
}

export class ConfidenceCalibrator {
  readonly file: CalibrationFile;
  /** sha256 of the file's bytes: part of the link-cache key. */
  readonly sha256: string;
  readonly path: string;
  /** The parts whose complements multiply into P(in KB), each with its prevalence shift worked out once. */
  private readonly absenceParts: { model: CalibrationModel; shift: number }[];

  constructor(file: CalibrationFile, sha256: string, path: string) {
    // Features are only ever appended, so a file fit on a leading run of them reads the same values
    // (a calibration from before 2026-11-26's six name features still loads).
    const n = file.features.length;
    if (n === 0 || n > CONFIDENCE_FEATURES.length || file.features.some((f, i) => f !== CONFIDENCE_FEATURES[i])) {
      throw new InputError(`${path}: fitted on features [${file.features.join(', ')}], this linker computes [${CONFIDENCE_FEATURES.join(', ')}] (a file's must be the same or a leading run of them); fit it again with cuilink calibrate`, 'BAD_CALIBRATION');
    }
    checkModelShape(file.right, n, path, file.right.kind === 'logistic' ? '' : 'right.');
    if (file.nil) checkModelShape(file.nil.model, n, path, 'nil.');
    if (file.nonEntity) checkModelShape(file.nonEntity.model, n, path, 'nonEntity.');
    this.absenceParts = [file.nonEntity, file.nil].flatMap((part) => (part ? [{ model: part.model, shift: prevalenceShift(part) }] : []));
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
    // The tree schema is recursive: a tree nested thousands deep would overflow the stack in it.
    const deep = pathDeeperThan(raw, MAX_TREE_DEPTH + FILE_LEVELS_ABOVE_A_TREE);
    if (deep !== undefined) {
      throw new InputError(`calibration file ${path}: '${deep.slice(0, 6).join('.')}…' nests more than ${MAX_TREE_DEPTH + FILE_LEVELS_ABOVE_A_TREE} levels deep (a tree of more than ${MAX_TREE_DEPTH} splits)`, 'BAD_CALIBRATION');
    }
    // Leaves, weights and biases of 1e400 read as Infinity, which the schema's numbers accept and a logit turns into NaN confidences.
    const infinite = pathOfNonFinite(raw);
    if (infinite !== undefined) throw new InputError(`calibration file ${path}: '${infinite.join('.')}': must be a finite number (1e400 and the like read as Infinity)`, 'BAD_CALIBRATION');
    const parsed = calibrationFileSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new InputError(`calibration file ${path}: '${issue.path.join('.') || '(root)'}': ${issue.message}`, 'BAD_CALIBRATION');
    }
    return new ConfidenceCalibrator(asFormat2(parsed.data), createHash('sha256').update(bytes).digest('hex'), path);
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
    return this.assess(features).confidence;
  }

  /** Both readings of a feature vector at once: `confidence` (P(top-1 right)) and `inKb` (P(in KB)). */
  assess(features: ArrayLike<number>): { confidence: number; inKb: number } {
    const inKb = this.inKbProbability(features);
    return { confidence: sigmoid(modelLogit(this.file.right, features)) * inKb, inKb };
  }

  /**
   * P(the mention's concept is in the KB) for a feature vector: P(it names a concept) · P(that
   * concept is in the KB | it names one), the non-entity and NIL parts' complements; a missing
   * part reads 1.
   */
  inKbProbability(features: ArrayLike<number>): number {
    let inKb = 1;
    for (const part of this.absenceParts) inKb *= 1 - sigmoid(modelLogit(part.model, features) + part.shift);
    return inKb;
  }
}

/** Bayes: the log-odds shift that moves a part from the prevalence it was fit at to the assumed one. */
function prevalenceShift(part: { trainedPrevalence: number; assumedPrevalence: number }): number {
  return Math.log(part.assumedPrevalence / (1 - part.assumedPrevalence)) - Math.log(part.trainedPrevalence / (1 - part.trainedPrevalence));
}

function sigmoid(z: number): number {
  return 1 / (1 + Math.exp(-z));
}

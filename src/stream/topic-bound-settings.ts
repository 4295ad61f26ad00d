import { getPath } from './env-vars.ts';

/**
 * Stage settings that act only through a topic the stage may not have. Given without it they
 * would load and do nothing (CUILINK_REVIEW_BELOW without CUILINK_REVIEW_TOPIC: the operator
 * believes unsure mentions go to review, and none do), so loadStageConfig refuses them. Judged on
 * what was given (file, environment, flags), never on the defaults every config carries.
 */

type TopicKey = 'review' | 'labelRequests' | 'measureRequests';

const LEARN: readonly TopicKey[] = ['labelRequests'];
const MEASURE: readonly TopicKey[] = ['measureRequests'];
const EITHER_LABEL_STREAM: readonly TopicKey[] = ['labelRequests', 'measureRequests'];

/**
 * Each setting and the topics of which it needs one. The learn stream's choice (policy, budget, α)
 * is void without its topic: with only a measure topic the selector's budget is 0. The measure
 * budget only bounds requests to the measure topic. The window, the split and the memory bounds
 * shape either stream (measure notes are kept out of the learn stream too).
 */
export const TOPIC_BOUND_SETTINGS: readonly { setting: string; needs: readonly TopicKey[] }[] = [
  { setting: 'review.belowConfidence', needs: ['review'] },
  { setting: 'labels.policy', needs: LEARN },
  { setting: 'labels.budget', needs: LEARN },
  { setting: 'labels.recurrenceExponent', needs: LEARN },
  { setting: 'labels.measureBudget', needs: MEASURE },
  { setting: 'labels.windowMs', needs: EITHER_LABEL_STREAM },
  { setting: 'labels.measureFraction', needs: EITHER_LABEL_STREAM },
  { setting: 'labels.splitSeed', needs: EITHER_LABEL_STREAM },
  { setting: 'labels.maxPool', needs: EITHER_LABEL_STREAM },
  { setting: 'labels.maxSurfaces', needs: EITHER_LABEL_STREAM },
];

/** The first given setting whose topics are all absent from the validated config, with the topics it needs. */
export function settingWithoutItsTopic(given: Record<string, unknown>, topics: Partial<Record<TopicKey, string>>): { setting: string; needs: readonly TopicKey[] } | undefined {
  return TOPIC_BOUND_SETTINGS.find(({ setting, needs }) => getPath(given, setting.split('.')) !== undefined && needs.every((topic) => topics[topic] === undefined));
}

/** NER labels the evaluator reports apart, at most; later ones count under OTHER_LABEL. */
export const MAX_LABEL_GROUPS = 32;

/** The group of labels past the limit and of values that do not look like a label. */
export const OTHER_LABEL = 'other';

/** A label: 1–32 letters, digits and `_ . , : + -`, the first a letter or digit ("SpecificDisease", "T047", "B-DIS"). */
const LABEL_SHAPE = /^[A-Za-z0-9][A-Za-z0-9_.,:+-]{0,31}$/;

/**
 * The NER label a scored sample is grouped under in the windows, /report, /metrics (attribute
 * `group` of `by="ner_label"`) and the state file. Labels come from the gold topic's producers:
 * a free-text field or a hostile producer would otherwise add a series per distinct value for the
 * life of the process (the SDK keeps every attribute set it was given) and could put note text
 * into metric labels. The first MAX_LABEL_GROUPS label-shaped values are kept as they are, for
 * the life of the process; every other value is OTHER_LABEL.
 */
export class LabelGroups {
  private readonly kept = new Set<string>();

  group(label: string): string {
    if (this.kept.has(label)) return label;
    if (label === OTHER_LABEL || this.kept.size >= MAX_LABEL_GROUPS || !LABEL_SHAPE.test(label)) return OTHER_LABEL;
    this.kept.add(label);
    return label;
  }
}

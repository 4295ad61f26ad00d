/**
 * The Label Studio labeling config the exported tasks are built for, and the tag names the import
 * reads back. Control names never equal a task data key: Label Studio's JSON-MIN export puts both
 * side by side in one object, so a clash would overwrite the data.
 */
export const CONTROL = {
  /** The Text object tag: shows `data.text`, the note. */
  text: 'text',
  /** Labels control: the mention's span, pre-annotated; the annotator keeps it (or the import refuses). */
  span: 'span',
  /** Choices control fed by `data.candidates`: the linker's candidates, several ticks for a composite mention. */
  concept: 'concept',
  /** Choices control with the one 'none of these / NIL' choice. */
  none: 'none',
  /** TextArea control: concept ids the candidates do not offer. */
  otherId: 'other_id',
} as const;

/** The one label of the span control. */
export const SPAN_LABEL = 'Mention';

/** Value of the 'none of these / NIL' choice; also accepted typed into the free id field. */
export const NIL_CHOICE = 'NIL';

/**
 * Dynamic choices (`value="$candidates"`) load each task's candidates from its data, so one config
 * serves every task. The NIL choice is a separate control, not an item of the dynamic list, so no
 * concept id can ever be read as NIL. `maxUsages="1"`: one span per task, the requested one.
 */
export const LABELING_CONFIG = `<View>
  <Header value="Link the highlighted mention to its concept"/>
  <Labels name="${CONTROL.span}" toName="${CONTROL.text}" maxUsages="1">
    <Label value="${SPAN_LABEL}" background="#ffd54f"/>
  </Labels>
  <Text name="${CONTROL.text}" value="$text"/>
  <Header value="Its concept (tick several only for a composite mention such as 'breast and ovarian cancer')"/>
  <Choices name="${CONTROL.concept}" toName="${CONTROL.text}" choice="multiple" value="$candidates"/>
  <Choices name="${CONTROL.none}" toName="${CONTROL.text}" choice="multiple">
    <Choice value="${NIL_CHOICE}" html="none of these / NIL: no concept of the vocabulary fits"/>
  </Choices>
  <Header value="Or its concept id when no candidate fits (e.g. MESH:D001943; several separated by |)"/>
  <TextArea name="${CONTROL.otherId}" toName="${CONTROL.text}" rows="1" maxSubmissions="1" editable="true"/>
</View>
`;

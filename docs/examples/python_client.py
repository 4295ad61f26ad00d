"""A Python producer and consumer for cuilink (confluent-kafka + fastavro), plain wire format
(Avro single-object encoding: C3 01, the schema's CRC-64-AVRO fingerprint, the Avro binary).

    pip install confluent-kafka fastavro
    python docs/examples/python_client.py --brokers host:9092 [--input cuilink.notes --output cuilink.linked]

Produces three NoteEvents (one with an emoji before its mention) and prints the LinkedNotes the
stage writes back. Offsets are UTF-16 code units: see `utf16_offset` and docs/stream-formats.md.
"""
import argparse
import io
import json
import time
import uuid
from pathlib import Path

import fastavro
from confluent_kafka import Consumer, Producer

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def load(name):
    return fastavro.parse_schema(json.loads((SCHEMAS / name).read_text()))


MARKER = b"\xc3\x01"


def fingerprint(schema):
    # CRC-64-AVRO of the Parsing Canonical Form; fastavro's hex is already the little-endian bytes
    # a single-object header carries. (The `avro` package's Schema.fingerprint() differs for
    # schemas with a timestamp-millis field: its canonical form keeps {"type": "long"}.)
    return bytes.fromhex(fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form(schema), "CRC-64-AVRO"))


def single_object(schema, record):
    buf = io.BytesIO()
    buf.write(MARKER + fingerprint(schema))
    fastavro.schemaless_writer(buf, schema, record)
    return buf.getvalue()


def utf16_offset(text, index):
    """Python str index (code points) -> UTF-16 code units, what cuilink's start/end count."""
    return len(text[:index].encode("utf-16-le")) // 2


def mention(text, surface, mention_id, label="Phenotype"):
    i = text.index(surface)
    return {"id": mention_id, "start": utf16_offset(text, i), "end": utf16_offset(text, i + len(surface)),
            "text": surface, "label": label, "score": None}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--input", default="cuilink.notes")
    parser.add_argument("--output", default="cuilink.linked")
    args = parser.parse_args()

    note_schema, linked_schema = load("note-event.avsc"), load("linked-note.avsc")
    # Writer schemas by fingerprint: the current LinkedNote and its older versions.
    linked_writers = {fingerprint(s): s for s in [linked_schema] + [load(f"history/{p.name}") for p in sorted((SCHEMAS / "history").glob("linked-note.v*.avsc"))]}
    run = uuid.uuid4().hex[:8]
    texts = ["Seen for seizures and hypotonia.", "\U0001F600 Mother reports ataxia.", "Short stature; scoliosis noted."]
    surfaces = [["seizures", "hypotonia"], ["ataxia"], ["Short stature", "scoliosis"]]
    producer = Producer({"bootstrap.servers": args.brokers, "enable.idempotence": True})
    sent = []
    for n, (text, spans) in enumerate(zip(texts, surfaces)):
        note = {"noteId": f"py-{run}-{n}", "text": text, "mentions": [mention(text, s, f"m{j}") for j, s in enumerate(spans)],
                "source": "python-example", "timestamp": int(time.time() * 1000), "nerModelVersion": None}
        producer.produce(args.input, key=note["noteId"], value=single_object(note_schema, note))
        sent.append(note["noteId"])
    producer.flush(30)

    consumer = Consumer({"bootstrap.servers": args.brokers, "group.id": f"py-example-{run}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe([args.output])
    found, deadline = {}, time.time() + 120
    while len(found) < len(sent) and time.time() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error() or msg.key().decode() not in sent:
            continue
        # The value names its writer schema: C3 01, then its 8-byte fingerprint.
        value = msg.value()
        writer = linked_writers.get(value[2:10]) if value[:2] == MARKER else None
        assert writer is not None, f"not a LinkedNote schema this example knows: {value[:10].hex()}"
        linked = fastavro.schemaless_reader(io.BytesIO(value[10:]), writer, linked_schema)
        found[linked["noteId"]] = linked
        for m in linked["mentions"]:
            # Filter on confidence (a probability), never on score (a ranking number); confidence is None
            # without a calibration, and a NIL mention has no conceptId (docs/confidence.md).
            confidence = None if m["confidence"] is None else round(m["confidence"], 3)
            print(linked["noteId"], m["mentionId"], m["start"], m["end"], m["conceptId"], m["conceptName"],
                  f"confidence={confidence}", "NIL" if m["nil"] else m["via"])
    consumer.close()
    missing = [n for n in sent if n not in found]
    print(f"{len(found)} of {len(sent)} notes linked" + (f"; missing {missing} (check the dead-letter topic)" if missing else ""))
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())

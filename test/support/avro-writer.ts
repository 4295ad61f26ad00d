import type avro from 'avsc';
import { str, varint, type AvroText } from './note-mutations.ts';

/**
 * An Avro binary writer driven by an avsc type, for record fuzzing (test/support/consumer-mutants.ts).
 * Unlike avsc's own writer it writes what a careless or hostile producer could: a string given as
 * a Buffer goes out as those bytes (a lone surrogate in WTF-8, invalid UTF-8), an int or long as
 * any bigint, a double as any number (NaN, infinities), and a union branch as any index
 * (`UnionBranch`). Nothing is validated: that is the reader's job under test.
 */
export class UnionBranch {
  constructor(
    readonly index: number,
    readonly value: unknown = null,
  ) {}
}

function unwrap(type: avro.Type): avro.Type {
  return (type as { underlyingType?: avro.Type }).underlyingType ?? type;
}

export function writeAvro(type: avro.Type, value: unknown): Buffer {
  const parts: Buffer[] = [];
  write(unwrap(type), value, parts);
  return Buffer.concat(parts);
}

function write(type: avro.Type, value: unknown, out: Buffer[]): void {
  switch (type.typeName) {
    case 'null':
      return;
    case 'boolean':
      out.push(Buffer.from([value ? 1 : 0]));
      return;
    case 'int':
    case 'long':
      out.push(varint(value as number | bigint));
      return;
    case 'double': {
      const bytes = Buffer.alloc(8);
      bytes.writeDoubleLE(value as number);
      out.push(bytes);
      return;
    }
    case 'string':
    case 'bytes':
      out.push(str(value as AvroText));
      return;
    case 'enum': {
      const symbols = (type as avro.types.EnumType).symbols;
      out.push(varint(typeof value === 'number' ? value : symbols.indexOf(value as string)));
      return;
    }
    case 'array': {
      const items = value as unknown[];
      if (items.length > 0) {
        out.push(varint(items.length));
        for (const item of items) write(unwrap((type as avro.types.ArrayType).itemsType), item, out);
      }
      out.push(varint(0));
      return;
    }
    case 'record':
      for (const field of (type as avro.types.RecordType).fields) write(unwrap(field.type), (value as Record<string, unknown>)[field.name], out);
      return;
    default: {
      if (!type.typeName.startsWith('union')) throw new Error(`writeAvro: no writer for ${type.typeName}`);
      const branches = (type as avro.types.UnwrappedUnionType).types;
      const branch = value instanceof UnionBranch ? value : new UnionBranch(value === null ? branches.findIndex((t) => t.typeName === 'null') : branches.findIndex((t) => t.typeName !== 'null'), value);
      out.push(varint(branch.index));
      const chosen = branches[branch.index];
      if (chosen !== undefined && branch.value !== null) write(unwrap(chosen), branch.value, out);
    }
  }
}

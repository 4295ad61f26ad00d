import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import hnswlib from 'hnswlib-node';
import { syncFile } from '../kb/durable-file.ts';
import { CuilinkError, InputError } from '../kb/errors.ts';
import { HNSW_HEADER_BYTES as HEADER_BYTES, hnswLayoutProblem, readHnswHeader, type HnswHeader } from './hnsw-file-layout.ts';

export interface HnswParams {
  /** Graph degree. */
  m: number;
  efConstruction: number;
  /** Search breadth at query time; raised to k when smaller. */
  efSearch: number;
  randomSeed: number;
}

export const DEFAULT_HNSW_PARAMS: HnswParams = { m: 16, efConstruction: 100, efSearch: 64, randomSeed: 100 };

export interface Neighbor {
  label: number;
  /** Inner product of the (unit) vectors: the cosine similarity. */
  similarity: number;
}

/**
 * hnswlib-node behind a small interface. Vectors are L2-normalized by the encoder, so the
 * inner-product space gives cosine similarity (hnswlib reports 1 - dot as the distance).
 * hnswlib-node takes plain arrays only (it rejects Float32Array), hence the conversions here.
 */
export class HnswIndex {
  private readonly index: InstanceType<typeof hnswlib.HierarchicalNSW>;
  readonly dims: number;
  private efSearch: number;

  private constructor(dims: number, efSearch: number) {
    this.dims = dims;
    this.index = new hnswlib.HierarchicalNSW('ip', dims);
    this.efSearch = efSearch;
  }

  static create(dims: number, capacity: number, params: HnswParams): HnswIndex {
    const index = new HnswIndex(dims, params.efSearch);
    index.index.initIndex({ maxElements: Math.max(1, capacity), m: params.m, efConstruction: params.efConstruction, randomSeed: params.randomSeed });
    index.index.setEf(params.efSearch);
    return index;
  }

  /** `checksummed`: the caller checked the file against the digest its writer recorded (then its links need no reading). */
  static load(file: string, dims: number, efSearch: number, options: { checksummed: boolean }): HnswIndex {
    const index = new HnswIndex(dims, efSearch);
    let fileDims: number | undefined;
    try {
      const problem = hnswLayoutProblem(file, { links: !options.checksummed });
      if (problem !== undefined) throw new Error(`${problem}: damaged, or no hnswlib index`);
      fileDims = storedDims(file);
      index.index.readIndexSync(file);
    } catch (error) {
      throw new InputError(`cannot read HNSW index ${file}: ${(error as Error).message}`, 'BAD_INDEX', error);
    }
    // hnswlib reads a file of other dims without complaint (getNumDimensions reports the ones it
    // was told) and then compares vectors of the wrong length: wrong neighbours, no error.
    if (fileDims !== dims) throw new InputError(`HNSW index ${file} holds vectors of ${fileDims} dims, its manifest says ${dims}: the file belongs to another model or index`, 'BAD_INDEX');
    index.index.setEf(efSearch);
    return index;
  }

  get size(): number {
    return this.index.getCurrentCount();
  }

  /** Room for vectors before `resize` is needed. */
  get capacity(): number {
    return this.index.getMaxElements();
  }

  /** Grows the graph's storage (a memory that keeps learning adds labels past its first size). */
  resize(capacity: number): void {
    this.index.resizeIndex(capacity);
  }

  /** Hides a label from every later search (a retracted memory label); the slot is never reused. */
  markDeleted(label: number): void {
    this.index.markDelete(label);
  }

  add(vector: Float32Array, label: number): void {
    this.index.addPoint(Array.from(vector), label);
  }

  /** The stored vector of a label (benchmarks compare HNSW with exact search over these). */
  vector(label: number): Float32Array {
    return Float32Array.from(this.index.getPoint(label));
  }

  /**
   * Writes the graph to `file` and flushes it to the disk. hnswlib's writer never checks its
   * stream, so a full or failing disk leaves a cut-short file and no error: the file is read back
   * for its size and refused (WRITE_INCOMPLETE) when it is not whole.
   */
  save(file: string): void {
    this.index.writeIndexSync(file);
    checkHnswFileWhole(file);
    syncFile(file);
  }

  setEfSearch(ef: number): void {
    this.efSearch = ef;
    this.index.setEf(ef);
  }

  /** `filter` restricts the search to labels it accepts (hnswlib checks it during the graph walk). */
  search(vector: Float32Array, k: number, filter?: (label: number) => boolean): Neighbor[] {
    const n = Math.min(k, this.size);
    if (n === 0) return [];
    if (n > this.efSearch) this.index.setEf(n);
    const result = filter ? this.index.searchKnn(Array.from(vector), n, filter) : this.index.searchKnn(Array.from(vector), n);
    if (n > this.efSearch) this.index.setEf(this.efSearch);
    const out: Neighbor[] = new Array(result.neighbors.length);
    for (let i = 0; i < result.neighbors.length; i++) {
      out[i] = { label: result.neighbors[i]!, similarity: 1 - result.distances[i]! };
    }
    return out;
  }
}

/** hnswlib marks a deleted element in the third byte of its level-0 link-list header (DELETE_MARK). */
const DELETE_MARK_BYTE = 2;
const DELETE_MARK = 0x01;

/**
 * Every label an hnswlib file holds, each with whether it is marked deleted, read from the file's
 * level-0 block. hnswlib-node tells deleted labels apart only by `getPoint` throwing, which copies
 * each vector into a JS array (about a second for 10K prototypes of 768 dims); this reads 9 bytes an
 * element. Call it on a file `HnswIndex.load` accepted (hnswlib checked its size against its header).
 */
export function readHnswLabels(file: string): Map<number, boolean> {
  const fd = openSync(file, 'r');
  try {
    const header = readHnswHeader(fd);
    if (header === undefined) throw new InputError(`HNSW index ${file}: too short for an hnswlib header`, 'BAD_INDEX');
    const { offsetLevel0, count, elementBytes, labelOffset } = header;
    if (elementBytes < labelOffset + 8) throw new InputError(`HNSW index ${file}: header gives ${elementBytes} bytes an element, its label at byte ${labelOffset}`, 'BAD_INDEX');
    const perChunk = Math.max(1, Math.floor((4 << 20) / elementBytes));
    const chunk = Buffer.alloc(perChunk * elementBytes);
    const labels = new Map<number, boolean>();
    for (let first = 0; first < count; first += perChunk) {
      const n = Math.min(perChunk, count - first);
      if (readSync(fd, chunk, 0, n * elementBytes, HEADER_BYTES + first * elementBytes) < n * elementBytes) throw new InputError(`HNSW index ${file}: shorter than the ${count} elements its header gives`, 'BAD_INDEX');
      for (let i = 0; i < n; i++) {
        const base = i * elementBytes;
        labels.set(Number(chunk.readBigUInt64LE(base + labelOffset)), (chunk[base + offsetLevel0 + DELETE_MARK_BYTE]! & DELETE_MARK) !== 0);
      }
    }
    return labels;
  } finally {
    closeSync(fd);
  }
}

/**
 * Throws WRITE_INCOMPLETE unless `file` is as long as its header says: the header, every element's
 * level-0 block, then each element's upper-level link-list size (4 bytes) and links, in element
 * order (the check hnswlib's own load makes). Reads the header and the link-list part only.
 */
export function checkHnswFileWhole(file: string): void {
  const fd = openSync(file, 'r');
  let size: number;
  let expected: number | undefined;
  try {
    size = fstatSync(fd).size;
    const header = readHnswHeader(fd);
    if (header !== undefined) {
      const { count } = header;
      let at = HEADER_BYTES + count * header.elementBytes;
      // Read in windows: one read a size would take seconds for millions of names.
      const window = Buffer.alloc(Math.min(4 << 20, Math.max(4, size - at)));
      let windowAt = -1;
      let windowLength = 0;
      let i = 0;
      for (; i < count && at + 4 <= size; i++) {
        if (windowAt < 0 || at < windowAt || at + 4 > windowAt + windowLength) {
          windowAt = at;
          windowLength = readSync(fd, window, 0, Math.min(window.length, size - at), at);
        }
        at += 4 + window.readUInt32LE(at - windowAt);
      }
      if (i === count) expected = at;
    }
  } finally {
    closeSync(fd);
  }
  if (expected !== size) {
    throw new CuilinkError('WRITE_INCOMPLETE', `HNSW index ${file} was not written whole (${size} bytes on disk${expected === undefined ? ', less than its header gives' : `, its header gives ${expected}`}): the disk is full or failing`);
  }
}

/**
 * The dims of the vectors an hnswlib file holds, from its header: each element is its level-0
 * links (offsetData bytes), then its vector, then its label (at labelOffset); an 'ip' vector is
 * float32, 4 bytes a dim.
 */
function storedDims(file: string): number {
  const fd = openSync(file, 'r');
  let header: HnswHeader | undefined;
  try {
    header = readHnswHeader(fd);
  } finally {
    closeSync(fd);
  }
  if (header === undefined) throw new Error('file too short for an hnswlib header');
  const vectorBytes = header.labelOffset - header.offsetData;
  if (vectorBytes <= 0 || vectorBytes % 4 !== 0) throw new Error(`header gives ${vectorBytes} bytes a vector, not float32 dims`);
  return vectorBytes / 4;
}

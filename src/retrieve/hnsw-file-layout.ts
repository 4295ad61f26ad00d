import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * hnswlib's reader trusts an index file: a label offset past an element, an entry point past the
 * elements, a level its links do not have or a neighbour id past the elements make it read past its
 * buffers (the process dies of SIGSEGV, at load or at the first search), and a capacity of 2^40
 * makes it allocate without bound. Its own check only walks the link lists to the file's size. A
 * file that is no index written by HnswIndex.save (a damaged copy, another file under the name) is
 * checked here first, against what hnswlib writes (hnswalg.h saveIndex), so that it is refused with
 * a reason instead of crashing the process.
 */

/** The header of an hnswlib file: six size_t (offsetLevel0, maxElements, count, sizePerElement, labelOffset, offsetData), then maxLevel (int), entryPoint (uint32), maxM, maxM0, M (size_t), mult (double), efConstruction (size_t). */
export const HNSW_HEADER_BYTES = 96;
/** hnswlib's internal ids are uint32. */
const MAX_ELEMENTS = 2 ** 32;
/** The most capacity a writer of cuilink leaves: an index is built to its size; a memory starts at 1,024 and doubles (memory-store.ts). */
const capacityBound = (count: number) => Math.max(1024, 2 * count);
/** Levels are drawn as -ln(U)·mult with mult = 1/ln(M): past 64 no index of any size reaches. */
const MAX_LEVEL = 64;

export interface HnswHeader {
  offsetLevel0: number;
  maxElements: number;
  count: number;
  elementBytes: number;
  labelOffset: number;
  offsetData: number;
  maxLevel: number;
  entryPoint: number;
  maxM: number;
  maxM0: number;
  m: number;
  mult: number;
}

/** The header of the open file `fd`, or undefined when the file is too short to hold one. */
export function readHnswHeader(fd: number): HnswHeader | undefined {
  const header = Buffer.alloc(HNSW_HEADER_BYTES);
  if (readSync(fd, header, 0, HNSW_HEADER_BYTES, 0) < HNSW_HEADER_BYTES) return undefined;
  const size = (at: number) => Number(header.readBigUInt64LE(at));
  return {
    offsetLevel0: size(0), maxElements: size(8), count: size(16), elementBytes: size(24), labelOffset: size(32), offsetData: size(40),
    maxLevel: header.readInt32LE(48), entryPoint: header.readUInt32LE(52), maxM: size(56), maxM0: size(64), m: size(72), mult: header.readDoubleLE(80),
  };
}

/** What in the header contradicts how hnswlib writes one, or undefined. */
function headerProblem(h: HnswHeader, fileBytes: number): string | undefined {
  if (h.offsetLevel0 !== 0) return `level-0 offset ${h.offsetLevel0}, not 0`;
  // A link list's count is an unsigned short: 2M links at most 65,535.
  if (!(h.m >= 2 && h.m <= 32_767 && h.maxM === h.m && h.maxM0 === 2 * h.m)) return `M ${h.m}, maxM ${h.maxM}, maxM0 ${h.maxM0} (hnswlib writes M, M and 2M)`;
  if (!(Math.abs(h.mult * Math.log(h.m) - 1) < 1e-9)) return `level multiplier ${h.mult}, not 1/ln(M) for M ${h.m}`;
  if (h.offsetData !== h.maxM0 * 4 + 4) return `vector offset ${h.offsetData}, not after the ${h.maxM0} level-0 links`;
  const vectorBytes = h.labelOffset - h.offsetData;
  if (vectorBytes <= 0 || vectorBytes % 4 !== 0) return `${vectorBytes} bytes a vector, not float32 dims`;
  if (h.elementBytes !== h.labelOffset + 8) return `${h.elementBytes} bytes an element, its 8-byte label at byte ${h.labelOffset}`;
  if (!(h.count <= h.maxElements && h.maxElements <= Math.min(MAX_ELEMENTS, capacityBound(h.count)))) return `${h.count} elements in a capacity of ${h.maxElements}`;
  if (HNSW_HEADER_BYTES + h.count * h.elementBytes + h.count * 4 > fileBytes) return `shorter (${fileBytes} bytes) than the ${h.count} elements its header gives`;
  if (h.count === 0) return h.maxLevel === -1 ? undefined : `no elements, yet top level ${h.maxLevel}`;
  if (h.entryPoint >= h.count) return `entry point ${h.entryPoint} of ${h.count} elements`;
  if (h.maxLevel < 0 || h.maxLevel > MAX_LEVEL) return `top level ${h.maxLevel}`;
  return undefined;
}

/** Why the link list at `at` in `bytes` (a count, flags, then `max` slots of ids) is not one of `count` elements, or undefined. */
function linkListProblem(bytes: Buffer, at: number, max: number, count: number): string | undefined {
  const links = bytes.readUInt16LE(at);
  if (links > max) return `${links} links where ${max} fit`;
  for (let j = 0; j < links; j++) {
    const id = bytes.readUInt32LE(at + 4 + 4 * j);
    if (id >= count) return `a link to element ${id} of ${count}`;
  }
  return undefined;
}

/** Why the level-0 blocks (each element's links, vector and label) hold a link list that is none, or undefined. Reads every vector: for a file no checksum vouches for. */
function levelZeroProblem(fd: number, h: HnswHeader): string | undefined {
  const perChunk = Math.max(1, Math.floor((4 << 20) / h.elementBytes));
  const chunk = Buffer.alloc(perChunk * h.elementBytes);
  for (let first = 0; first < h.count; first += perChunk) {
    const n = Math.min(perChunk, h.count - first);
    readSync(fd, chunk, 0, n * h.elementBytes, HNSW_HEADER_BYTES + first * h.elementBytes);
    for (let i = 0; i < n; i++) {
      const problem = linkListProblem(chunk, i * h.elementBytes, h.maxM0, h.count);
      if (problem !== undefined) return `element ${first + i}, level 0: ${problem}`;
    }
  }
  return undefined;
}

/**
 * Why `file` is no index hnswlib may be handed (a reason for an error message), or undefined: its
 * header as hnswlib writes one, and its upper-level link lists (after the level-0 block, one per
 * element: a 4-byte size, then that many bytes of whole levels) each within the top level, the
 * entry point's reaching it, and ending at the file's end. With `links` (a file no checksum vouches
 * for), also every link list's count and neighbour ids, which takes reading every vector.
 */
export function hnswLayoutProblem(file: string, options: { links: boolean }): string | undefined {
  const fd = openSync(file, 'r');
  try {
    const fileBytes = fstatSync(fd).size;
    const h = readHnswHeader(fd);
    if (h === undefined) return `${fileBytes} bytes, too short for an hnswlib header`;
    const problem = headerProblem(h, fileBytes);
    if (problem !== undefined || h.count === 0) return problem ?? (fileBytes === HNSW_HEADER_BYTES ? undefined : `${fileBytes - HNSW_HEADER_BYTES} bytes past an empty index`);
    const levelBytes = h.maxM * 4 + 4;
    let at = HNSW_HEADER_BYTES + h.count * h.elementBytes;
    // Read in windows (one read a size would take seconds for millions of names), each holding at least one whole list.
    const window = Buffer.alloc(Math.min(Math.max(4 << 20, 4 + h.maxLevel * levelBytes), fileBytes - at));
    let [windowAt, windowLength] = [-1, 0];
    for (let i = 0; i < h.count; i++) {
      if (at + 4 > fileBytes) return `ends in the link list of element ${i} of ${h.count}`;
      if (windowAt < 0 || at + 4 > windowAt + windowLength) {
        windowAt = at;
        windowLength = readSync(fd, window, 0, Math.min(window.length, fileBytes - at), at);
      }
      const listBytes = window.readUInt32LE(at - windowAt);
      const levels = listBytes / levelBytes;
      if (!Number.isInteger(levels) || levels > h.maxLevel) return `element ${i}: ${listBytes} bytes of upper-level links, not whole levels up to the top level ${h.maxLevel}`;
      if (i === h.entryPoint && levels !== h.maxLevel) return `the entry point ${i} has ${levels} upper levels, the top level is ${h.maxLevel}`;
      if (options.links && levels > 0) {
        if (at + 4 + listBytes > fileBytes) return `ends in the link list of element ${i} of ${h.count}`;
        if (at + 4 + listBytes > windowAt + windowLength) {
          windowAt = at;
          windowLength = readSync(fd, window, 0, Math.min(window.length, fileBytes - at), at);
        }
        for (let level = 0; level < levels; level++) {
          const bad = linkListProblem(window, at - windowAt + 4 + level * levelBytes, h.maxM, h.count);
          if (bad !== undefined) return `element ${i}, level ${level + 1}: ${bad}`;
        }
      }
      at += 4 + listBytes;
    }
    if (at !== fileBytes) return `${fileBytes} bytes, its header and link lists give ${at}`;
    return options.links ? levelZeroProblem(fd, h) : undefined;
  } finally {
    closeSync(fd);
  }
}

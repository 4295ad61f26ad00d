import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';

/** A file's length and SHA-256 (hex), as manifests record them to tell a file from any other. */
export interface FileDigest {
  bytes: number;
  sha256: string;
}

/** The digest of content already read (the bytes a reader is about to parse, not a second read of the file). */
export function digestOf(content: Uint8Array): FileDigest {
  return { bytes: content.length, sha256: createHash('sha256').update(content).digest('hex') };
}

/** The digest of a file, read in chunks: model and memory files may be larger than one Buffer can hold. */
export function fileDigest(path: string): FileDigest {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(4 << 20);
  let bytes = 0;
  const fd = openSync(path, 'r');
  try {
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) {
      hash.update(chunk.subarray(0, n));
      bytes += n;
    }
  } finally {
    closeSync(fd);
  }
  return { bytes, sha256: hash.digest('hex') };
}

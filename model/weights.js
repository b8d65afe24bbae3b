// The model files' format: float16 weights, checked against their record in
// train/models/manifest.json (size, then SHA-256) before anything runs on them.

/** float16 (IEEE binary16, little-endian) to float32. */
export function halfToFloat(bytes) {
  const u16 = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
  const out = new Float32Array(u16.length);
  for (let i = 0; i < u16.length; i++) {
    const h = u16[i], s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    out[i] = e === 0 ? s * f * 2 ** -24 : e === 31 ? (f ? NaN : s * Infinity) : s * (1 + f / 1024) * 2 ** (e - 15);
  }
  return out;
}

/** The error for a weights file of `received` bytes where the manifest says record.bytes. */
export function modelSizeError(record, received, file = record.file) {
  const why = received < record.bytes ? 'cut short, or a different file' : 'a different file';
  return new RangeError(`model file ${file}: ${received} bytes, but the manifest's record '${record.name}' says ${record.bytes} (${why})`);
}

// SHA-256 as lowercase hex by SubtleCrypto: the page's (secure contexts only: https, localhost)
// and Node's globalThis.crypto alike.
async function subtleSha256(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error('SubtleCrypto is not available here (a page served over http from another host than localhost is not a secure context)');
  const digest = new Uint8Array(await subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Checks a weights file against its manifest record before anything runs on it: its size
 * (record.bytes), then its SHA-256 (record.sha256). A damaged or truncated file would otherwise
 * give plausible but wrong logits. file: how the errors name it (record.file by default);
 * sha256(bytes): its hex digest, or a Promise of it (SubtleCrypto by default; Node passes
 * node:crypto's). Resolves to bytes; rejects with a RangeError naming the file.
 */
export async function verifyModelFile(record, bytes, { file = record.file, sha256 = subtleSha256 } = {}) {
  if (bytes.byteLength !== record.bytes) throw modelSizeError(record, bytes.byteLength, file);
  let digest;
  try {
    digest = await sha256(bytes);
  } catch (e) {
    throw new Error(`model file ${file}: its SHA-256 could not be computed to check it: ${e?.message ?? e}`, { cause: e });
  }
  if (digest !== record.sha256) {
    throw new RangeError(`model file ${file}: SHA-256 ${digest}, but the manifest's record '${record.name}' says ${record.sha256} (a damaged or different file)`);
  }
  return bytes;
}

// Reading a wasm module's bytes: a bounds-checked reader of its numbers and names, and its
// sections. scripts/relax-wasm.mjs (the relaxed build's post-link step) and bench/wasm-size.mjs
// read modules with it.

export class Reader {
  constructor(bytes, pos, end) {
    this.bytes = bytes;
    this.pos = pos;
    this.end = end;
  }
  byte() {
    if (this.pos >= this.end) throw new Error(`unexpected end at byte ${this.pos}`);
    return this.bytes[this.pos++];
  }
  skip(n) {
    if (this.pos + n > this.end) throw new Error(`unexpected end at byte ${this.pos}`);
    this.pos += n;
  }
  // An unsigned or signed LEB128 number of at most `bits` bits: its value (unsigned, up to 2^32)
  // and how many bytes it took.
  leb(bits = 32) {
    const start = this.pos;
    let value = 0, scale = 1, b;
    do {
      b = this.byte();
      if (this.pos - start > Math.ceil(bits / 7)) throw new Error(`LEB128 longer than ${bits} bits at byte ${start}`);
      value += (b & 0x7f) * scale;
      scale *= 128;
    } while (b & 0x80);
    return { value, length: this.pos - start };
  }
  u32() { return this.leb(32).value; }
  // A name: its length, then UTF-8.
  name() {
    const length = this.u32(), start = this.pos;
    this.skip(length);
    return new TextDecoder().decode(this.bytes.subarray(start, start + length));
  }
}

/** The module's sections in order: { id, start, end } (the byte range of each one's contents). */
export function* sections(bytes) {
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw new TypeError('not a WebAssembly module');
  }
  const top = new Reader(bytes, 8, bytes.length);
  while (top.pos < bytes.length) {
    const id = top.byte();
    const size = top.u32();
    const start = top.pos;
    top.skip(size);
    yield { id, start, end: start + size };
  }
}

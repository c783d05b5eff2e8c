/** Binary file detection: a known binary extension, or a NUL byte in the first 8 KiB. */
import { open } from 'node:fs/promises';
import { extname } from 'node:path';

const SNIFF_BYTES = 8192;

// Extensions whose files are binary even when their first 8 KiB happen to contain no NUL byte
const BINARY_EXTENSIONS = new Set(
  (
    'png jpg jpeg gif bmp ico webp tiff psd avif heic mp3 mp4 m4a wav ogg flac mov avi mkv webm ' +
    'zip gz tgz bz2 xz zst 7z rar tar jar war ear whl apk dmg iso ' +
    'pdf doc docx xls xlsx ppt pptx odt ods ' +
    'exe dll so dylib a o obj lib bin class pyc pyo wasm node ' +
    'woff woff2 ttf otf eot sqlite sqlite3 db parquet npy pkl onnx gguf safetensors pt'
  ).split(' '),
);

/** True when the path's extension names a binary format. */
export function hasBinaryExtension(path: string): boolean {
  return BINARY_EXTENSIONS.has(extname(path).slice(1).toLowerCase());
}

/** True when the buffer (a file's first bytes) contains a NUL byte. */
export function looksBinary(head: Uint8Array): boolean {
  return head.subarray(0, SNIFF_BYTES).includes(0);
}

/** True when the file is binary by extension or by its first 8 KiB. */
export async function isBinaryFile(path: string): Promise<boolean> {
  if (hasBinaryExtension(path)) return true;
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buf, 0, SNIFF_BYTES, 0);
    return looksBinary(buf.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

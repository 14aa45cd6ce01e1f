// Edits an LMDB store behind its back, as an older or newer peeklock would have left it on disk.

import { open } from 'lmdb';

/** Sets the schema version in `meta`, with the same environment flags the store uses. */
export async function setSchema(dir: string, version: number): Promise<void> {
  const env = open({ path: dir, maxDbs: 32, overlappingSync: false });
  await env.openDB('meta', {}).put('schema', version);
  await env.close();
}

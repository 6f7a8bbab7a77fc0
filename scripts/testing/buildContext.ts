// A path of this checkout copied as `docker build` has it in its build context: less what .dockerignore keeps out.
// For the image layout test (scripts/docker-layout.test.ts), which lays out the runtime stage's COPY lines without
// a Docker engine.
import { cp, lstat, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { DockerIgnore } from './dockerignore.ts';

/**
 * Whether the build context of the checkout at `root` holds `src`: a path .dockerignore does not leave out, or a
 * folder it leaves out that holds such a path - a `!` line brings something in it back. Docker goes into a folder
 * left out only to look for what a `!` line brings back, and sends the folder only on the way to it (BuildKit's
 * context walk, tonistiigi/fsutil walker.go, emits a skipped folder when a path below it is emitted): a folder left
 * out that holds nothing brought back is not in the context, not even empty. Links are not followed, as cp copies
 * the link itself.
 */
async function inBuildContext(root: string, ignore: DockerIgnore, src: string): Promise<boolean> {
  if (!ignore.excludes(relative(root, src).split(sep).join('/'))) return true;
  if (!ignore.hasExceptions || !(await lstat(src)).isDirectory()) return false;
  for (const name of await readdir(src)) if (await inBuildContext(root, ignore, join(src, name))) return true;
  return false;
}

/**
 * Copies `source` (relative to the checkout at `root`) to `dest` as the build context holds it. A path the checkout
 * lacks fails, as it fails `docker build`; one the context leaves out whole copies nothing, silently.
 */
export async function copyFromBuildContext(root: string, ignore: DockerIgnore, source: string, dest: string): Promise<void> {
  await cp(join(root, source), dest, { recursive: true, errorOnExist: true, force: false, filter: (src) => inBuildContext(root, ignore, src) });
}

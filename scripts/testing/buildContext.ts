// A path of this checkout copied as `docker build` has it in its build context: less what .dockerignore keeps out.
// For the image layout test (scripts/docker-layout.test.ts), which lays out the runtime stage's COPY lines without
// a Docker engine.
import { cp, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { DockerIgnore } from './dockerignore.ts';

/** cp's filter: what the build context holds of the checkout at `root` (a path the context leaves out is not copied). */
function inBuildContext(root: string, ignore: DockerIgnore) {
  return async (src: string): Promise<boolean> => {
    const path = relative(root, src).split(sep).join('/');
    if (!ignore.excludes(path)) return true;
    // A folder left out may still hold a file a `!` line brings back: go in, and judge its files one by one.
    return ignore.hasExceptions && (await stat(src)).isDirectory();
  };
}

/**
 * Copies `source` (relative to the checkout at `root`) to `dest` as the build context holds it. A path the checkout
 * lacks fails, as it fails `docker build`; one the context leaves out whole copies nothing, silently.
 */
export async function copyFromBuildContext(root: string, ignore: DockerIgnore, source: string, dest: string): Promise<void> {
  await cp(join(root, source), dest, { recursive: true, errorOnExist: true, force: false, filter: inBuildContext(root, ignore) });
}

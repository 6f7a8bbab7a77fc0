// `npm run build`: `next build` of the console through server/build.ts, so the build records the hash of the
// sources it was made from and `npm start` and the browser tests reuse it while the sources are unchanged.
import { fileURLToPath } from 'node:url';
import { buildConsole } from '../server/build.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
try {
  await buildConsole(root, { onOutput: (line) => process.stdout.write(`${line}\n`) });
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

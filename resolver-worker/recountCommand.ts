// How an operator runs the counter recount where this process runs: the words the Resolver's warnings and the
// recount's own usage give. In the Docker image there is no npm script to run: its entry point (scripts/docker-role.sh)
// marks the roles it starts with NIMBUS_IMAGE_ROLE, and the recount is the image's `recount` role there.

/** `npm run recount --`, or `docker run --rm <image> recount` inside the image; the arguments follow it. */
export function recountCommand(env: NodeJS.ProcessEnv = process.env): string {
  return env.NIMBUS_IMAGE_ROLE ? 'docker run --rm <image> recount' : 'npm run recount --';
}

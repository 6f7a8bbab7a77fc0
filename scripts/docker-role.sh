#!/bin/sh
# The Docker image's entry point (Dockerfile): runs the role named as the container's command (with the arguments
# that follow it, for recount), or the health check. Run from the image's WORKDIR, /app.
# exec, so that the role is PID 1's child-free replacement and gets SIGTERM from `docker stop` directly.
set -eu
role="${1:-console}"
case "$role" in
  console)
    cd /app/console
    exec node server.js
    ;;
  resolver)
    exec node --import tsx resolver-worker/main.ts
    ;;
  demo)
    exec node --import tsx scripts/demo.ts
    ;;
  recount)
    # The operator's counter recount that the Resolver's warnings name (`npm run recount`, docs/deploy.md), run as
    # the resolver role runs: the arguments after the role are the command's (`recount --all`, `recount billing`).
    # NIMBUS_IMAGE_ROLE: its usage then names the form it was run in (`docker run ... recount`).
    shift
    NIMBUS_IMAGE_ROLE=recount
    export NIMBUS_IMAGE_ROLE
    exec node --import tsx scripts/recount.ts "$@"
    ;;
  healthcheck)
    # Only the console listens; the other roles are healthy while they run.
    if [ -f /app/console/server.js ] && [ "$(cat /proc/1/cmdline | tr '\0' ' ')" = "node server.js " ]; then
      exec node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
    fi
    exit 0
    ;;
  *)
    echo "usage: docker run nimbus [console|resolver|demo|recount <endpoint id>...|recount --all]" >&2
    exit 2
    ;;
esac

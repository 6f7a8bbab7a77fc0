// Next.js configuration of the operator console. The console runs as a Node server: `npm start`, `npm run console`
// and the browser tests start it programmatically (server/console.ts) from the build in `.next`, with the settings
// the build recorded, as the standalone server does; a deployment runs the standalone server
// (`.next/standalone/server.js`, the Docker image), which carries only the files the console needs.
// server/build.ts copies the static files into it after each build.
import type { NextConfig } from 'next';

const config: NextConfig = {
  // NIMBUS_NEXT_DIST_DIR lets parallel builds (several engineers or test runs on one checkout) each use their own
  // output folder instead of racing to build into one `.next`. Default: `.next`.
  distDir: process.env.NIMBUS_NEXT_DIST_DIR || '.next',
  // A self-contained server (server.js + the traced node_modules) for the image. server/console.ts serves the same
  // build in-process, with the settings it recorded, as that server does.
  output: 'standalone',
  // The broker and database clients (and the embedded Cosmos server the store module can start) are plain
  // Node packages: loading them from node_modules at run time keeps them out of the server bundle.
  serverExternalPackages: [
    '@azure/service-bus',
    '@azure/cosmos',
    '@azure/identity',
    '@opentelemetry/sdk-node',
    '@vercel/cosmosdb-server',
    'rhea',
    'pino',
  ],
  // `npm run typecheck` checks the whole tree with one tsconfig; a second check inside `next build` only costs time.
  typescript: { ignoreBuildErrors: true, tsconfigPath: 'tsconfig.next.json' },
  poweredByHeader: false,
  // Browsers ask for /favicon.ico when no icon link is in the head yet (page metadata is streamed after the shell):
  // answer with the app's icon rather than a 404 in every console's log.
  async rewrites() {
    return [{ source: '/favicon.ico', destination: '/icon.svg' }];
  },
  // Security headers that never vary, on every response including static files; the CSP (nonce per request)
  // is set by proxy.ts.
  async headers() {
    return [
      {
        source: '/:path*',
        headers: [
          { key: 'X-Content-Type-Options', value: 'nosniff' },
          { key: 'Referrer-Policy', value: 'same-origin' },
          // For browsers that predate CSP frame-ancestors.
          { key: 'X-Frame-Options', value: 'DENY' },
          { key: 'Permissions-Policy', value: 'camera=(), microphone=(), geolocation=(), payment=()' },
          { key: 'Cross-Origin-Opener-Policy', value: 'same-origin' },
        ],
      },
    ];
  },
  reactStrictMode: true,
};

export default config;

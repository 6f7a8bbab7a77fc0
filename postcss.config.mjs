// Tailwind 4 runs as a PostCSS plugin in the Next.js build.
const config = { plugins: { '@tailwindcss/postcss': {} } };
export default config;

// What a `.dockerignore` keeps out of the build context, read as Docker reads it, for the tests that lay out the
// image's files from this checkout without a Docker engine (scripts/docker-layout.test.ts). Docker's rules: one
// pattern a line, `#` a comment; paths relative to the context's root (a leading `/` changes nothing); `*` and `?`
// never match a `/`, `**` matches any number of folders (none included); a pattern that matches a folder leaves out
// everything in it; a line starting with `!` brings back what it matches; the last line that matches a path decides.
// Character classes, backslash escapes and a `**` inside a name are refused rather than misread: no line of ours uses
// them.

interface Rule {
  pattern: string;
  regex: RegExp;
  exception: boolean;
}

/** A pattern as the anchored regular expression Docker compiles it to (moby/patternmatcher). */
function compile(pattern: string): RegExp {
  if (/[[\]\\]/.test(pattern)) throw new Error(`.dockerignore: character classes and escapes are not read here: ${pattern}`);
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] ?? '';
    if (ch === '*' && pattern[i + 1] === '*') {
      i++;
      // `**` glued to a name (`**.log`) is a suffix match in Docker, not read here.
      if (i + 1 < pattern.length && pattern[i + 1] !== '/') throw new Error(`.dockerignore: \`**\` inside a name is not read here: ${pattern}`);
      if (pattern[i + 1] === '/') i++; // `**/` is `**`
      // At the end, everything below; elsewhere any number of whole folders, none included.
      source += i + 1 >= pattern.length ? '.*' : '(.*/)?';
    } else if (ch === '*') source += '[^/]*';
    else if (ch === '?') source += '[^/]';
    else source += ch.replace(/[.+^${}()|]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** Cleans a pattern as Docker does (filepath.Clean, then the leading `/` dropped). */
function clean(pattern: string): string {
  const parts: string[] = [];
  for (const part of pattern.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}

export interface DockerIgnore {
  /** Whether the build context leaves out this path (relative to the context's root, `/`-separated). */
  excludes(path: string): boolean;
  /** Whether any line brings a path back (`!`): a folder left out may then still hold files that are sent. */
  readonly hasExceptions: boolean;
}

export function parseDockerIgnore(text: string): DockerIgnore {
  const rules: Rule[] = [];
  for (const raw of text.split('\n')) {
    if (raw.startsWith('#')) continue; // Docker takes a comment before trimming: an indented `#` is a pattern
    const line = raw.trim();
    if (line === '') continue;
    const exception = line.startsWith('!');
    const pattern = clean(exception ? line.slice(1).trim() : line);
    if (pattern === '') continue;
    rules.push({ pattern, regex: compile(pattern), exception });
  }
  return {
    hasExceptions: rules.some((r) => r.exception),
    excludes(path: string): boolean {
      const parts = clean(path).split('/');
      // The path itself and every folder above it: a pattern that matches a folder leaves out what it holds.
      const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
      let excluded = false;
      for (const rule of rules) if (candidates.some((c) => rule.regex.test(c))) excluded = !rule.exception;
      return excluded;
    },
  };
}

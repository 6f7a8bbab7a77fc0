// Per-agent limits of the Agent API: a token bucket of calls per agent (every call, receives included: a loop that
// polls without waiting is what a buggy agent does) and a bound on calls in flight at once per agent (a long-poll
// holds a slot for up to 30 s; an agent with a few workers needs a few, a runaway one is stopped at the bound).
// In this process's memory, per agent principal, like the console's change rate limit (auth/rateLimit.ts).
import { RateLimiter, type RateLimitSettings } from '../auth/rateLimit.ts';

export interface AgentLimits {
  rate: RateLimitSettings;
  /** Agent API calls of one agent in flight at once. */
  concurrent: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = { rate: { perMinute: 600, burst: 120 }, concurrent: 8 };

export function agentLimits(env: Record<string, string | undefined> = process.env): AgentLimits {
  const num = (v: string | undefined, d: number) => {
    const n = Number(v);
    return v !== undefined && v !== '' && Number.isInteger(n) && n > 0 ? n : d;
  };
  return {
    rate: {
      perMinute: num(env.NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE, DEFAULT_AGENT_LIMITS.rate.perMinute),
      burst: num(env.NIMBUS_AGENT_RATE_LIMIT_BURST, DEFAULT_AGENT_LIMITS.rate.burst),
    },
    concurrent: num(env.NIMBUS_AGENT_MAX_CONCURRENT, DEFAULT_AGENT_LIMITS.concurrent),
  };
}

type Slot = { limiter: RateLimiter; inFlight: Map<string, number> };
const slot = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.agentLimits')] ??= {
  limiter: new RateLimiter(),
  inFlight: new Map<string, number>(),
}) as Slot;

export type Admission = { ok: true; release: () => void } | { ok: false; detail: string };

/** Takes one call from the agent's budget, without a slot (a call refused for its input, which holds none). */
export function countCall(agentKey: string, limits: AgentLimits = agentLimits()): { ok: true } | { ok: false; detail: string } {
  const wait = slot.limiter.take(agentKey, limits.rate);
  return wait > 0 ? { ok: false, detail: `too many Agent API calls in a short time; try again in ${wait} s` } : { ok: true };
}

/** Takes one call from the agent's budget and a slot of its concurrency; `release` frees the slot. */
export function admit(agentKey: string, limits: AgentLimits = agentLimits()): Admission {
  const inFlight = slot.inFlight.get(agentKey) ?? 0;
  if (inFlight >= limits.concurrent)
    return { ok: false, detail: `at most ${limits.concurrent} Agent API calls of one agent at a time; ${inFlight} are in flight` };
  const counted = countCall(agentKey, limits);
  if (!counted.ok) return counted;
  slot.inFlight.set(agentKey, inFlight + 1);
  let released = false;
  return {
    ok: true,
    release: () => {
      if (released) return;
      released = true;
      const n = (slot.inFlight.get(agentKey) ?? 1) - 1;
      if (n <= 0) slot.inFlight.delete(agentKey);
      else slot.inFlight.set(agentKey, n);
    },
  };
}

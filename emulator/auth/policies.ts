// Shared access policies: a key name, a key pair and the rights the key grants (Send, Listen, Manage). Namespace
// policies cover every entity; entity policies (the AuthorizationRules of a TopicDescription or QueueDescription)
// cover one topic or queue and everything under it (subscriptions, dead-letter queues, $management nodes). The namespace
// key of the connection string the emulator prints is the namespace policy RootManageSharedAccessKey.
// With a data directory the policies created through the admin plane survive a restart (one small JSON file,
// written whole and renamed into place); the root key is never written: it comes from --key or is new each start.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

export const ACCESS_RIGHTS = ['Manage', 'Send', 'Listen'] as const;
export type AccessRight = (typeof ACCESS_RIGHTS)[number];

export const ROOT_KEY_NAME = 'RootManageSharedAccessKey';

export interface AccessPolicy {
  keyName: string;
  rights: AccessRight[];
  primaryKey: string;
  secondaryKey: string;
}

/** A key as Azure makes them: 32 random bytes. base64url without padding, so it needs no escaping in a connection string. */
export function generateKey(): string {
  return randomBytes(32).toString('base64url');
}

const keyName = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[A-Za-z0-9._-]+$/, { error: 'a key name may use letters, digits, ".", "_" and "-"' });
const key = z
  .string()
  .min(16, { error: 'a key needs at least 16 characters' })
  .max(256)
  .regex(/^[A-Za-z0-9+/=_-]+$/, { error: 'a key may use base64 characters only' });

/** What a caller gives for a policy; missing keys are generated, as Azure does. */
export const policyInputSchema = z.object({
  keyName,
  rights: z
    .array(z.enum(ACCESS_RIGHTS))
    .min(1, { error: 'a policy needs at least one right' })
    .refine((r) => !r.includes('Manage') || (r.includes('Send') && r.includes('Listen')), {
      error: 'Manage requires Send and Listen as well (as on Azure)',
    }),
  primaryKey: key.optional(),
  secondaryKey: key.optional(),
});
export type PolicyInput = z.input<typeof policyInputSchema>;

export function toPolicy(input: PolicyInput): AccessPolicy {
  const p = policyInputSchema.parse(input);
  return {
    keyName: p.keyName,
    rights: [...new Set(p.rights)],
    primaryKey: p.primaryKey ?? generateKey(),
    secondaryKey: p.secondaryKey ?? generateKey(),
  };
}

const fileSchema = z.object({
  version: z.literal(1),
  namespace: z.array(policyInputSchema.required()),
  entities: z.record(z.string(), z.array(policyInputSchema.required())),
});

export class PolicyStore {
  private readonly namespacePolicies = new Map<string, AccessPolicy>();
  private readonly entityPolicies = new Map<string, AccessPolicy[]>();
  private readonly file?: string;

  constructor(rootKey: string, options: { dataDir?: string; onLoadError?: (message: string) => void } = {}) {
    this.namespacePolicies.set(ROOT_KEY_NAME.toLowerCase(), {
      keyName: ROOT_KEY_NAME,
      rights: ['Manage', 'Send', 'Listen'],
      primaryKey: rootKey,
      secondaryKey: rootKey,
    });
    if (options.dataDir) {
      this.file = join(options.dataDir, 'access-policies.json');
      this.load(options.onLoadError);
    }
  }

  namespacePolicy(name: string): AccessPolicy | undefined {
    return this.namespacePolicies.get(name.toLowerCase());
  }

  listNamespacePolicies(): AccessPolicy[] {
    return [...this.namespacePolicies.values()];
  }

  setNamespacePolicy(policy: AccessPolicy): void {
    if (policy.keyName.toLowerCase() === ROOT_KEY_NAME.toLowerCase()) {
      throw new PolicyError(
        `${ROOT_KEY_NAME} is the emulator's namespace key; start the emulator with --key to choose it.`,
      );
    }
    this.namespacePolicies.set(policy.keyName.toLowerCase(), policy);
    this.save();
  }

  deleteNamespacePolicy(name: string): boolean {
    if (name.toLowerCase() === ROOT_KEY_NAME.toLowerCase()) {
      throw new PolicyError(`${ROOT_KEY_NAME} cannot be deleted.`);
    }
    const deleted = this.namespacePolicies.delete(name.toLowerCase());
    if (deleted) this.save();
    return deleted;
  }

  /** The AuthorizationRules of a topic or queue (empty when it has none). */
  policiesOf(entity: string): AccessPolicy[] {
    return this.entityPolicies.get(entity.toLowerCase()) ?? [];
  }

  entityPolicy(entity: string, name: string): AccessPolicy | undefined {
    const lower = name.toLowerCase();
    return this.policiesOf(entity).find((p) => p.keyName.toLowerCase() === lower);
  }

  /** Replace a topic's or queue's AuthorizationRules (a PUT of its description carries the whole list). */
  setEntityPolicies(entity: string, policies: AccessPolicy[]): void {
    const names = new Set<string>();
    for (const p of policies) {
      const lower = p.keyName.toLowerCase();
      if (names.has(lower)) throw new PolicyError(`The key name '${p.keyName}' appears twice.`);
      names.add(lower);
    }
    if (policies.length === 0) {
      if (!this.entityPolicies.delete(entity.toLowerCase())) return;
    } else {
      this.entityPolicies.set(entity.toLowerCase(), policies);
    }
    this.save();
  }

  private load(onLoadError?: (message: string) => void): void {
    let raw: string;
    try {
      raw = readFileSync(this.file!, 'utf8');
    } catch {
      return; // no file yet
    }
    try {
      const parsed = fileSchema.parse(JSON.parse(raw));
      for (const p of parsed.namespace) {
        if (p.keyName.toLowerCase() !== ROOT_KEY_NAME.toLowerCase())
          this.namespacePolicies.set(p.keyName.toLowerCase(), p);
      }
      for (const [entity, list] of Object.entries(parsed.entities)) this.entityPolicies.set(entity, list);
    } catch (err) {
      // A damaged file must not stop the emulator; its policies are gone, which denies rather than grants.
      onLoadError?.(
        `access-policies.json could not be read (${err instanceof Error ? err.name : 'error'}); starting without its policies`,
      );
    }
  }

  private save(): void {
    if (!this.file) return;
    const body = JSON.stringify({
      version: 1,
      namespace: this.listNamespacePolicies().filter((p) => p.keyName !== ROOT_KEY_NAME),
      entities: Object.fromEntries(this.entityPolicies),
    });
    mkdirSync(join(this.file, '..'), { recursive: true });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, body, { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}

export class PolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyError';
  }
}

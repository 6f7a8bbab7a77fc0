// The parts of the npm `oidc-provider` (no bundled types, and @types/oidc-provider is not a dependency) that the
// tests' provider uses (server/testing/oidcProvider.ts).
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface KoaContextWithOIDC {
    oidc: { client?: { clientId: string } };
    type: string;
    body: unknown;
  }
  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId: string };
    grantId?: string;
  }
  export interface Grant {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    save(): Promise<string>;
  }
  export type Configuration = Record<string, unknown> & {
    interactions?: { url(ctx: KoaContextWithOIDC, interaction: { uid: string }): string };
    extraTokenClaims?(ctx: KoaContextWithOIDC, token: { kind: string; clientId?: string }): unknown;
    renderError?(ctx: KoaContextWithOIDC, out: Record<string, unknown>, error: unknown): void | Promise<void>;
  };
  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => unknown;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
    Grant: { new (init: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
  }
}

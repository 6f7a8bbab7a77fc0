// Which admin resource a request path names. Paths follow the ATOM management API the admin client uses:
//   /$Resources/Topics                      list topics
//   /{topic}                                one topic
//   /{topic}/Subscriptions[/]               list subscriptions
//   /{topic}/Subscriptions/{sub}            one subscription
//   /{topic}/Subscriptions/{sub}/Rules[/]   list rules
//   /{topic}/Subscriptions/{sub}/Rules/{r}  one rule
//   /$Resources/AuthorizationRules[/]       list namespace shared access policies (emulator only, JSON)
//   /$Resources/AuthorizationRules/{name}   one namespace policy (emulator only, JSON)
// "Subscriptions" and "Rules" match case-insensitively (the service treats paths that way).

export type AdminRoute =
  | { kind: 'namespace' }
  | { kind: 'topicList' }
  | { kind: 'queueList' }
  | { kind: 'policyList' }
  | { kind: 'policy'; name: string }
  | { kind: 'topic'; topic: string }
  | { kind: 'subscriptionList'; topic: string }
  | { kind: 'subscription'; topic: string; subscription: string }
  | { kind: 'ruleList'; topic: string; subscription: string }
  | { kind: 'rule'; topic: string; subscription: string; rule: string };

export class RouteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RouteError';
  }
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new RouteError('The request path is not valid percent-encoding.');
  }
}

/** The route for a URL pathname (still percent-encoded), or undefined when no admin resource has that shape. */
export function matchRoute(pathname: string): AdminRoute | undefined {
  let m: RegExpExecArray | null;
  if (/^\/\$namespaceinfo\/?$/i.test(pathname)) return { kind: 'namespace' };
  if (/^\/\$Resources\/Topics\/?$/i.test(pathname)) return { kind: 'topicList' };
  if (/^\/\$Resources\/Queues\/?$/i.test(pathname)) return { kind: 'queueList' };
  if (/^\/\$Resources\/AuthorizationRules\/?$/i.test(pathname)) return { kind: 'policyList' };
  if ((m = /^\/\$Resources\/AuthorizationRules\/([^/]+)$/i.exec(pathname)))
    return { kind: 'policy', name: decode(m[1]!) };
  // The topic part is greedy so that, as in the client, the last "/Subscriptions/" splits the path.
  if ((m = /^\/(.+)\/Subscriptions\/([^/]+)\/Rules\/([^/]+)$/i.exec(pathname))) {
    return { kind: 'rule', topic: decode(m[1]!), subscription: decode(m[2]!), rule: decode(m[3]!) };
  }
  if ((m = /^\/(.+)\/Subscriptions\/([^/]+)\/Rules\/?$/i.exec(pathname))) {
    return { kind: 'ruleList', topic: decode(m[1]!), subscription: decode(m[2]!) };
  }
  if ((m = /^\/(.+)\/Subscriptions\/([^/]+)\/?$/i.exec(pathname))) {
    return { kind: 'subscription', topic: decode(m[1]!), subscription: decode(m[2]!) };
  }
  if ((m = /^\/(.+)\/Subscriptions\/?$/i.exec(pathname)))
    return { kind: 'subscriptionList', topic: decode(m[1]!) };
  if ((m = /^\/([^$/][^]*?)\/?$/.exec(pathname))) return { kind: 'topic', topic: decode(m[1]!) };
  return undefined;
}

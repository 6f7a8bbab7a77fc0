// The comparison rules the provisioner uses to decide what drifted (pure; the provisioning itself is tested
// against the emulator in provision.integration.test.ts).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RuleProperties, SubscriptionProperties } from '@azure/service-bus';
import { forwardTarget, ruleDrift, subscriptionDrift, type SubscriptionModel } from './index.ts';

const wanted: SubscriptionModel = {
  topic: 'shop',
  name: 'Retry',
  requiresSession: false,
  forwardTo: 'shop',
  rules: [],
  purpose: 'test',
};
const existing = (props: Partial<SubscriptionProperties>) => ({ requiresSession: false, forwardTo: undefined, ...props }) as SubscriptionProperties;
const rule = (filter: RuleProperties['filter'], action?: string) => ({ name: 'r', filter, action: { sqlExpression: action } }) as RuleProperties;

describe('drift', () => {
  test('forward targets compare by entity name, case-insensitively, whatever URL form the broker returns', () => {
    assert.equal(forwardTarget('sb://ns.servicebus.windows.net/Shop'), 'shop');
    assert.equal(forwardTarget('http://127.0.0.1:5672/shop/'), 'shop');
    assert.equal(forwardTarget('shop'), 'shop');
    assert.equal(forwardTarget(''), undefined);
    assert.equal(forwardTarget(undefined), undefined);
  });

  test('a subscription drifts on session flag or forward target', () => {
    assert.equal(subscriptionDrift(existing({ forwardTo: 'sb://host/SHOP' }), wanted), undefined);
    assert.equal(subscriptionDrift(existing({ forwardTo: 'sb://host/shop', requiresSession: true }), wanted), 'session flag true → false');
    assert.equal(subscriptionDrift(existing({ forwardTo: 'sb://host/Resolver' }), wanted), 'forward target resolver → shop');
    assert.equal(subscriptionDrift(existing({}), wanted), 'forward target (none) → shop');
  });

  test('a rule drifts when its filter or action SQL differs, but not on whitespace or a trailing semicolon', () => {
    const model = { name: 'r', filter: "user.To = 'Retry'", action: "SET user.To = 'shop'; SET user.From = 'Retry'" };
    assert.equal(ruleDrift(rule({ sqlExpression: "user.To = 'Retry'" }, "SET user.To = 'shop'; SET user.From = 'Retry';"), model), undefined);
    assert.equal(ruleDrift(rule({ sqlExpression: "  user.To  = 'Retry' " }, "SET user.To = 'shop'; SET user.From = 'Retry'"), model), undefined);
    assert.match(ruleDrift(rule({ sqlExpression: "user.To = 'retry'" }, model.action), model) ?? '', /^filter/);
    assert.match(ruleDrift(rule({ sqlExpression: model.filter }), model) ?? '', /^action '' →/);
    assert.match(ruleDrift(rule({ correlationId: 'x' }, model.action), model) ?? '', /correlation filter/);
    // An action the model does not want is drift too.
    assert.match(ruleDrift(rule({ sqlExpression: model.filter }, "SET user.X = '1'"), { name: 'r', filter: model.filter }) ?? '', /action/);
  });
});

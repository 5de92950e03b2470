// Why a nacked publish was refused, as far as the queues declared through the transport tell: a basic.nack carries
// no reason, so the error names the causes those queues allow.
import { Exchange, Queue } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { publishRefusalReason } from '../src/publish-refusal';
import { Topology } from '../src/topology';

describe('publishRefusalReason', () => {
  it('says a quorum queue has no leader yet, without blaming x-overflow', () => {
    const reason = publishRefusalReason([new Queue('tasks', { queueType: 'quorum' })]);
    expect(reason).toBe(
      'queue "tasks" has no leader yet (its leader\'s node was lost and the other nodes are electing a new one); ' +
        'kq publishes on a fresh channel, and publishes succeed once a new leader is elected',
    );
  });

  it('blames x-overflow for a queue declared with it, typed or as a raw argument', () => {
    expect(publishRefusalReason([new Queue('tasks', { maxLength: 1, arguments: { 'x-overflow': 'reject-publish' } })])).toBe(
      'queue "tasks" is full (x-overflow=reject-publish)',
    );
    expect(publishRefusalReason([new Queue('tasks', { arguments: { 'x-overflow': 'reject-publish-dlx', 'x-queue-type': 'classic' } })])).toBe(
      'queue "tasks" is full (x-overflow=reject-publish-dlx)',
    );
  });

  it('names both causes for a quorum queue that rejects publishes when full', () => {
    const reason = publishRefusalReason([new Queue('tasks', { queueType: 'quorum', maxLength: 5, arguments: { 'x-overflow': 'reject-publish' } })]);
    expect(reason).toMatch(/^queue "tasks" has no leader yet .*, or queue "tasks" is full \(x-overflow=reject-publish\)$/);
  });

  it('names every cause when the queues are unknown, and none for a classic queue that drops its head', () => {
    const unknown = publishRefusalReason([]);
    expect(unknown).toMatch(/no leader yet/);
    expect(unknown).toMatch(/x-overflow=reject-publish/);
    expect(publishRefusalReason([new Queue('plain', { maxLength: 5 })])).toBe(unknown);
  });
});

describe('Topology.queuesRoutedTo', () => {
  it('finds the declared queues a publish reaches through the default, direct, fanout and topic exchanges', () => {
    const topology = new Topology();
    const tasks = new Queue('tasks', { queueType: 'quorum' });
    const audit = new Queue('audit');
    topology.addQueue(tasks);
    topology.addQueue(audit);
    topology.addExchange(new Exchange('direct-x', { type: 'direct' }));
    topology.addExchange(new Exchange('fan', { type: 'fanout' }));
    topology.addExchange(new Exchange('topics', { type: 'topic' }));
    topology.addQueueBinding({ queue: 'tasks', exchange: 'direct-x', routingKey: 'tasks', arguments: {} });
    topology.addQueueBinding({ queue: 'tasks', exchange: 'fan', routingKey: '', arguments: {} });
    topology.addQueueBinding({ queue: 'audit', exchange: 'fan', routingKey: '', arguments: {} });
    topology.addQueueBinding({ queue: 'audit', exchange: 'topics', routingKey: 'orders.#', arguments: {} });

    expect(topology.queuesRoutedTo('', 'tasks')).toEqual([tasks]);
    expect(topology.queuesRoutedTo('', 'undeclared')).toEqual([]);
    expect(topology.queuesRoutedTo('direct-x', 'tasks')).toEqual([tasks]);
    expect(topology.queuesRoutedTo('direct-x', 'other')).toEqual([]);
    expect(topology.queuesRoutedTo('fan', 'anything')).toEqual([tasks, audit]);
    expect(topology.queuesRoutedTo('topics', 'orders.eu.new')).toEqual([audit]);
  });
});

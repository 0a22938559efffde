// The streams replay reads: the platform's fixed topics, and a delivery topic per messenger of the catalogue.
import { deliveryTopic, messengers, topics, type TopicSpec } from '@mds/contracts';

/**
 * A stream as replay names it: a fixed topic's key (`message`, `clientRequest`...), or `delivery<Name>` for a
 * messenger's delivery topic (`deliveryTelegram`). The CLI spells it in kebab-case (`delivery-telegram`).
 */
export type StreamKey = string;

/** "vk_teams" -> "VkTeams": a messenger's name as the tail of its delivery stream's key. */
const pascal = (name: string) => name.replace(/(?:^|_)([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

let cached: { messengers: number; streams: ReadonlyMap<StreamKey, TopicSpec> } | undefined;

/** Every stream with its topic, in the order the docs list them: messages, their deliveries, then the others. */
export function replayStreams(): ReadonlyMap<StreamKey, TopicSpec> {
  const all = messengers();
  if (cached?.messengers === all.length) return cached.streams;
  const streams = new Map<StreamKey, TopicSpec>();
  for (const [key, spec] of Object.entries(topics) as [StreamKey, TopicSpec][]) {
    streams.set(key, spec);
    if (key === 'message')
      for (const m of all) streams.set(`delivery${pascal(m.name)}`, deliveryTopic(m.name));
  }
  cached = { messengers: all.length, streams };
  return streams;
}

export function streamKeys(): StreamKey[] {
  return [...replayStreams().keys()];
}

/** The topic of a stream; an unknown key is a bug (the CLI checks names where they come in). */
export function streamSpec(stream: StreamKey): TopicSpec {
  const spec = replayStreams().get(stream);
  if (!spec) throw new Error(`no stream ${JSON.stringify(stream)}`);
  return spec;
}

/** Every stream by the name --streams takes (kebab-case of its key). */
export function streamsByName(): Record<string, StreamKey> {
  return Object.fromEntries(streamKeys().map((k) => [k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), k]));
}

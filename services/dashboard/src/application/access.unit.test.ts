// The access use cases' rules over the AccessStore in memory (test/memory-access-store.ts).
import { describe } from 'vitest';
import { accessRules } from '../../test/access-rules.js';
import { memoryAccessStore } from '../../test/memory-access-store.js';

describe('access over the store in memory', () => accessRules(memoryAccessStore));

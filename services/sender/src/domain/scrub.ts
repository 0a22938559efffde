export { redactSecrets, scrubError, ScrubbedError, REDACTED } from '@mds/messengers';

// client-registry's endpoints, through the one registry client (@mds/registry-client).
export { createEndpointDirectory, type Endpoint, type EndpointDirectory } from '@mds/registry-client';

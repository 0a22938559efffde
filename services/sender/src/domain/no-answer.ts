export { noAnswer } from '@mds/messengers';

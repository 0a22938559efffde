import { createBrowserRouter } from 'react-router';
import { Shell } from './components/Shell.js';
import { AuditPage } from './pages/Audit.js';
import { BotsPage } from './pages/Bots.js';
import { ClientsPage } from './pages/Clients.js';
import { DeliveriesPage } from './pages/Deliveries.js';
import { EndpointsPage } from './pages/Endpoints.js';
import { KeyRequestsPage } from './pages/KeyRequests.js';
import { KeysPage } from './pages/Keys.js';
import { MembersPage } from './pages/Members.js';
import { MessagePage } from './pages/Message.js';
import { MessagesPage } from './pages/Messages.js';
import { NotFoundPage } from './pages/NotFound.js';
import { OverviewPage } from './pages/Overview.js';
import { SendPage } from './pages/Send.js';
import { SetPasswordPage } from './pages/SetPassword.js';
import { SignInPage } from './pages/SignIn.js';

export const router = createBrowserRouter([
  { path: '/sign-in', element: <SignInPage /> },
  { path: '/set-password', element: <SetPasswordPage /> },
  {
    path: '/',
    element: <Shell />,
    children: [
      { index: true, element: <OverviewPage /> },
      { path: 'messages', element: <MessagesPage /> },
      { path: 'messages/:id', element: <MessagePage /> },
      { path: 'send', element: <SendPage /> },
      { path: 'deliveries', element: <DeliveriesPage /> },
      { path: 'keys', element: <KeysPage /> },
      { path: 'keys/:keyId', element: <KeyRequestsPage /> },
      // The endpoints page keeps the address of the single-URL page it replaced.
      { path: 'webhook', element: <EndpointsPage /> },
      { path: 'bots', element: <BotsPage /> },
      { path: 'clients', element: <ClientsPage /> },
      { path: 'members', element: <MembersPage /> },
      { path: 'audit', element: <AuditPage /> },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
]);

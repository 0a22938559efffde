import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, type ReactNode } from 'react';
import { api, setCsrfToken } from './api.js';
import type { Permission, SessionView } from './types.js';

const SessionContext = createContext<SessionView | undefined>(undefined);

/** The signed-in member's session (null when signed out), kept by the query cache. */
export function useSessionQuery() {
  return useQuery({
    queryKey: ['session'],
    queryFn: async () => {
      try {
        const session = await api<SessionView>('GET', '/session');
        setCsrfToken(session.csrf_token);
        return session;
      } catch (error) {
        if ((error as { status?: number }).status === 401) return null;
        throw error;
      }
    },
    staleTime: 60_000,
  });
}

export function SessionProvider({ session, children }: { session: SessionView; children: ReactNode }) {
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionView {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}

export function useCan(): (permission: Permission) => boolean {
  const session = useSession();
  return (permission) => session.permissions.includes(permission);
}

/** After signing in or out: the session query holds the new state. */
export function useSetSession() {
  const client = useQueryClient();
  return (session: SessionView | null) => {
    if (session) setCsrfToken(session.csrf_token);
    client.clear();
    client.setQueryData(['session'], session);
  };
}

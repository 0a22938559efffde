import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = (path: string) => decodeURIComponent(new URL(path, import.meta.url).pathname);

// The web application: built into ../dist/web, which the dashboard's server serves. `npx vite --config
// web/vite.config.ts` serves it with hot reload, passing /api to a dashboard running on 8085.
export default defineConfig({
  root: here('.'),
  plugins: [react()],
  build: {
    outDir: here('../dist/web'),
    emptyOutDir: true,
    chunkSizeWarningLimit: 2_000,
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8085' } },
});

import { defineConfig } from 'vite';

// `base: './'` keeps asset paths relative: the C++ binary embeds dist/ and
// serves it at `/`.
export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 200 },
  server: { proxy: { '/api': 'http://127.0.0.1:8098' } },
  test: { environment: 'node', include: ['src/**/*.test.ts'] },
});

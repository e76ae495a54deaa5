import { defineConfig } from 'vite';

// `base: './'` keeps asset paths relative: the C++ binary embeds dist/ and
// serves it at `/`.
export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 200 },
  // The server answers only its own Host and Origin (docs/http-api.md): the
  // dev proxy presents itself as a same-origin client.
  server: {
    proxy: {
      '/api': {
        target: 'http://127.0.0.1:8098',
        changeOrigin: true,
        configure: (proxy) => proxy.on('proxyReq', (req) => req.removeHeader('origin')),
      },
    },
  },
  test: { environment: 'node', include: ['src/**/*.test.ts'] },
});

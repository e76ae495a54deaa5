import { defineConfig } from 'vite';

// The HTML report of `retrystorm analyze`: one script and one style sheet
// (dist-report/report.js, report.css) that the C++ program inlines into a
// single file, so the report opens from disk with no server. The explorer's
// own build (vite.config.ts) is separate and unchanged.
export default defineConfig({
  build: {
    outDir: 'dist-report',
    emptyOutDir: true,
    copyPublicDir: false,
    lib: {
      entry: 'src/report/main.ts',
      formats: ['iife'],
      name: 'RetrystormReport',
      fileName: () => 'report.js',
      cssFileName: 'report',
    },
  },
});

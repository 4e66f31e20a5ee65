// Builds the UI into the Python package (served by `streamsift serve` at `/`).
// Everything is bundled: no CDN, no web fonts, nothing fetched from outside at run time.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../src/streamsift/ui/static",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
});

// Vite imports CSS files for their side effect (bundled into the build's stylesheet).
declare module "*.css";

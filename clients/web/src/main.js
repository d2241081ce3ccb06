// Entry point: start the app in #app.

import { App } from './app.js';

const app = new App(document.getElementById('app'));
app.start();
// For debugging in the console and for end-to-end tests that read state.
window.elementals = app;

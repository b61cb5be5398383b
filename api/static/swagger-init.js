// Starts Swagger UI on /docs. A file of its own, not an inline script, so the page's
// Content-Security-Policy can allow scripts from this origin only.
"use strict";

window.ui = SwaggerUIBundle({
  url: document.currentScript.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null, // the badge would send the schema to a validator on another host
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
